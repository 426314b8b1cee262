// The type a ksmon dashboard JSON file must have: Grafana's published dashboard
// type (@grafana/schema, the classic JSON model that schemaVersion numbers
// belong to), with each panel's options and custom field config typed by the
// published types of that panel's plugin.
//
// The test writes every dashboard as `const dashboard: KsmonDashboard = <JSON>`,
// so TypeScript's excess-property check rejects a misspelled field and its
// assignability check a value of the wrong type.

import type {
  Dashboard,
  DataQuery,
  FieldConfig,
  FieldConfigSource,
  Panel,
  RowPanel,
} from "@grafana/schema";
import type * as stat from "@grafana/schema/dist/esm/raw/composable/stat/panelcfg/x/StatPanelCfg_types.gen";
import type * as stateTimeline from "@grafana/schema/dist/esm/raw/composable/statetimeline/panelcfg/x/StateTimelinePanelCfg_types.gen";
import type * as table from "@grafana/schema/dist/esm/raw/composable/table/panelcfg/x/TablePanelCfg_types.gen";
import type * as timeSeries from "@grafana/schema/dist/esm/raw/composable/timeseries/panelcfg/x/TimeSeriesPanelCfg_types.gen";

// A type as it appears in JSON. The schema declares closed value sets as
// TypeScript enums, which only enum members satisfy; a JSON file holds their
// values ("thresholds"), so each string enum becomes the union of its values.
// Numeric enums already accept their numbers.
export type JsonOf<T> = T extends string
  ? `${T}`
  : T extends number | boolean | null | undefined
    ? T
    : T extends ReadonlyArray<infer Item>
      ? Array<JsonOf<Item>>
      : T extends object
        ? { [Key in keyof T]: JsonOf<T[Key]> }
        : T;

// Grafana's Panel leaves `options` and `fieldConfig.defaults.custom` open
// (Record<string, unknown>) because their shape belongs to the panel plugin.
// Queries stay open beyond the fields every data source shares: the schema
// package publishes no Prometheus query type.
type PluginPanel<Type extends string, Options, CustomFieldConfig> = Omit<
  Panel,
  "type" | "options" | "fieldConfig" | "targets"
> & {
  type: Type;
  options?: Options;
  fieldConfig?: Omit<FieldConfigSource, "defaults"> & {
    defaults: Omit<FieldConfig, "custom"> & { custom?: CustomFieldConfig };
  };
  targets?: Array<DataQuery & Record<string, unknown>>;
};

// Every panel type the dashboards use; a new one must be added here with its
// plugin's types, or its panels fail the check. The stat plugin publishes no
// custom field config, so a stat panel may have none.
type DataPanel =
  | PluginPanel<"timeseries", timeSeries.Options, timeSeries.FieldConfig>
  | PluginPanel<"stat", stat.Options, never>
  | PluginPanel<"table", table.Options, table.FieldConfig>
  | PluginPanel<"state-timeline", stateTimeline.Options, stateTimeline.FieldConfig>;

// A collapsed row holds its panels; they get the same plugin types.
type Row = Omit<RowPanel, "panels"> & { panels: DataPanel[] };

export type KsmonPanel = DataPanel | Row;

export type KsmonDashboard = JsonOf<Omit<Dashboard, "panels"> & { panels?: KsmonPanel[] }>;

// Compile-time proof that the check is only ever stricter than Grafana's own
// type: every KsmonDashboard is a Dashboard (in its JSON form).
type Narrows<Narrow extends Wide, Wide> = Narrow;
export type KsmonDashboardIsAGrafanaDashboard = Narrows<KsmonDashboard, JsonOf<Dashboard>>;
