package ksmon.spark;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeMap$;
import org.apache.spark.sql.catalyst.expressions.ExprId;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.SortOrder;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Statistics;
import org.apache.spark.sql.catalyst.plans.physical.Partitioning;
import org.apache.spark.sql.catalyst.plans.physical.UnknownPartitioning;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.classic.Dataset$;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.LogicalRDD;

import scala.Function1;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag$;
import scala.runtime.AbstractPartialFunction;

/**
 * An evaluation's plans, analysed once, run again and again on new data.
 *
 * <p>Building the evaluation from Python costs tens of thousands of py4j round trips and an
 * analysis per DataFrame call, the same for every micro-batch. This class holds the plans
 * that call built once over stand-in inputs: the inputs' leaves, then each "stage" (a plan
 * that ends in a local checkpoint, and the checkpoint's leaf that later plans read), then the
 * final plan. {@link #bind} puts a batch's inputs where the stand-ins were, computes each
 * stage's checkpoint in order in place of its stand-in leaf, and returns the final plan over
 * the batch's data. No Python is involved past the call.
 *
 * <p>A leaf is a {@link LogicalRDD}, known by its RDD's id. Each occurrence is replaced by the
 * new leaf's RDD under the occurrence's own attributes, so the plans above need no change and
 * keep the partitioning they were planned with.
 */
public final class PlanTemplate {
  private final List<Integer> inputIds;
  private final List<Dataset<Row>> stagePlans;
  private final List<Integer> stageIds;
  private final Dataset<Row> finalPlan;

  public PlanTemplate(
      List<Dataset<Row>> inputs,
      List<Dataset<Row>> stagePlans,
      List<Dataset<Row>> stageLeaves,
      Dataset<Row> finalPlan) {
    if (stagePlans.size() != stageLeaves.size()) {
      throw new IllegalArgumentException("every stage needs its plan and its leaf");
    }
    this.inputIds = new ArrayList<>();
    for (Dataset<Row> input : inputs) {
      inputIds.add(leafId(input));
    }
    this.stagePlans = new ArrayList<>(stagePlans);
    this.stageIds = new ArrayList<>();
    Set<Integer> known = new HashSet<>(inputIds);
    for (int i = 0; i < stagePlans.size(); i++) {
      requireOnly(stagePlans.get(i), known, "stage " + i);
      int id = leafId(stageLeaves.get(i));
      stageIds.add(id);
      known.add(id);
    }
    requireOnly(finalPlan, known, "the final plan");
    this.finalPlan = finalPlan;
  }

  /**
   * A leaf standing for {@code plan}'s result while the template is built: the plan's own
   * output attributes (as a local checkpoint's leaf keeps them) over an empty RDD of its own.
   * No planning, no job: a local checkpoint optimises and plans the whole plan to make its
   * leaf, which {@link #bind} replaces anyway.
   */
  public static Dataset<Row> standIn(Dataset<Row> plan) {
    SparkSession session = plan.sparkSession();
    LogicalPlan analyzed = plan.queryExecution().analyzed();
    RDD<InternalRow> empty =
        session.sparkContext().emptyRDD(ClassTag$.MODULE$.apply(InternalRow.class));
    LogicalRDD leaf =
        new LogicalRDD(
            analyzed.output(),
            empty,
            new UnknownPartitioning(0),
            CollectionConverters.asScala(new ArrayList<SortOrder>()).toList(),
            analyzed.isStreaming(),
            Option.empty(),
            session,
            Option.empty(),
            Option.empty());
    return Dataset$.MODULE$.ofRows(session, leaf);
  }

  public int stages() {
    return stagePlans.size();
  }

  /** The final plan over {@code inputs} (in the order given to the constructor). */
  public Dataset<Row> bind(List<Dataset<Row>> inputs) {
    return bindStages(inputs, null);
  }

  /** The physical plan of every stage, then of the final plan, over {@code inputs}. */
  public List<String> physicalPlans(List<Dataset<Row>> inputs) {
    List<String> plans = new ArrayList<>();
    Dataset<Row> last = bindStages(inputs, plans);
    plans.add(last.queryExecution().executedPlan().toString());
    return plans;
  }

  private Dataset<Row> bindStages(List<Dataset<Row>> inputs, List<String> plans) {
    if (inputs.size() != inputIds.size()) {
      throw new IllegalArgumentException(
          "expected " + inputIds.size() + " inputs, got " + inputs.size());
    }
    Map<Integer, LogicalRDD> bound = new HashMap<>();
    for (int i = 0; i < inputs.size(); i++) {
      bound.put(inputIds.get(i), leafOf(inputs.get(i)));
    }
    for (int i = 0; i < stagePlans.size(); i++) {
      Dataset<Row> stage = rebound(stagePlans.get(i), bound);
      if (plans != null) {
        plans.add(stage.queryExecution().executedPlan().toString());
      }
      bound.put(stageIds.get(i), leafOf(stage.localCheckpoint(false)));
    }
    return rebound(finalPlan, bound);
  }

  private static Dataset<Row> rebound(Dataset<Row> template, Map<Integer, LogicalRDD> bound) {
    SparkSession session = template.sparkSession();
    LogicalPlan plan = template.queryExecution().analyzed();
    LogicalPlan replaced = plan.transformUpWithSubqueries(new Swap(bound, session));
    // Everything in it was analysed with the template, and the swapped leaves keep its attributes.
    replaced.setAnalyzed();
    return Dataset$.MODULE$.ofRows(session, replaced);
  }

  private static int leafId(Dataset<Row> leaf) {
    return leafOf(leaf).rdd().id();
  }

  private static LogicalRDD leafOf(Dataset<Row> leaf) {
    LogicalPlan plan = leaf.queryExecution().analyzed();
    if (!(plan instanceof LogicalRDD)) {
      throw new IllegalArgumentException(
          "not a checkpointed leaf: " + plan.getClass().getSimpleName());
    }
    return (LogicalRDD) plan;
  }

  /** Every checkpointed leaf {@code plan} reads must be an input or an earlier stage. */
  private static void requireOnly(Dataset<Row> plan, Set<Integer> known, String what) {
    List<Integer> unknown = new ArrayList<>();
    plan.queryExecution()
        .analyzed()
        .foreach(
            node -> {
              if (node instanceof LogicalRDD && !known.contains(((LogicalRDD) node).rdd().id())) {
                unknown.add(((LogicalRDD) node).rdd().id());
              }
              return null;
            });
    if (!unknown.isEmpty()) {
      throw new IllegalArgumentException(
          what + " reads data that is neither an input nor an earlier stage: RDDs " + unknown);
    }
  }

  /**
   * Replaces a stand-in leaf by the bound one, under the stand-in's own attributes (each
   * occurrence of a leaf has its own), with the bound leaf's partitioning and ordering
   * carried over to them: the operators above then see the partitioning they were planned
   * with and add no shuffle.
   */
  private static final class Swap extends AbstractPartialFunction<LogicalPlan, LogicalPlan> {
    private final Map<Integer, LogicalRDD> bound;
    private final SparkSession session;

    Swap(Map<Integer, LogicalRDD> bound, SparkSession session) {
      this.bound = bound;
      this.session = session;
    }

    @Override
    public boolean isDefinedAt(LogicalPlan node) {
      return node instanceof LogicalRDD && bound.containsKey(((LogicalRDD) node).rdd().id());
    }

    @Override
    public <A1 extends LogicalPlan, B1> B1 applyOrElse(A1 node, Function1<A1, B1> otherwise) {
      if (!isDefinedAt(node)) {
        return otherwise.apply(node);
      }
      LogicalRDD standIn = (LogicalRDD) node;
      LogicalRDD given = bound.get(standIn.rdd().id());
      List<Attribute> wanted = CollectionConverters.asJava(standIn.output());
      List<Attribute> found = CollectionConverters.asJava(given.output());
      if (wanted.size() != found.size()) {
        throw new IllegalStateException(
            "a bound leaf has " + found.size() + " columns where " + wanted.size() + " were planned");
      }
      Map<ExprId, Attribute> renamed = new HashMap<>();
      for (int i = 0; i < wanted.size(); i++) {
        renamed.put(found.get(i).exprId(), wanted.get(i));
      }
      Rename rename = new Rename(renamed);
      Partitioning partitioning = given.outputPartitioning();
      if (partitioning instanceof Expression) {
        partitioning = (Partitioning) ((Expression) partitioning).transform(rename);
      }
      List<SortOrder> ordering = new ArrayList<>();
      for (SortOrder order : CollectionConverters.asJava(given.outputOrdering())) {
        ordering.add((SortOrder) order.transform(rename));
      }
      @SuppressWarnings("unchecked")
      B1 replaced =
          (B1)
              standIn.copy(
                  standIn.output(),
                  given.rdd(),
                  partitioning,
                  CollectionConverters.asScala(ordering).toList(),
                  given.isStreaming(),
                  given.stream(),
                  session,
                  // The bound leaf's size (not its column statistics, which name its own
                  // attributes): the planner keeps single-partition joins unshuffled only
                  // below a size, and an unknown size counts as huge.
                  Option.apply(
                      new Statistics(
                          given.stats().sizeInBytes(),
                          given.stats().rowCount(),
                          AttributeMap$.MODULE$.empty(),
                          given.stats().isRuntime())),
                  Option.empty());
      return replaced;
    }
  }

  /** Attribute references by expression id to the stand-in's attributes. */
  private static final class Rename extends AbstractPartialFunction<Expression, Expression> {
    private final Map<ExprId, Attribute> renamed;

    Rename(Map<ExprId, Attribute> renamed) {
      this.renamed = renamed;
    }

    @Override
    public boolean isDefinedAt(Expression e) {
      return e instanceof Attribute && renamed.containsKey(((Attribute) e).exprId());
    }

    @Override
    public <A1 extends Expression, B1> B1 applyOrElse(A1 e, Function1<A1, B1> otherwise) {
      if (!isDefinedAt(e)) {
        return otherwise.apply(e);
      }
      @SuppressWarnings("unchecked")
      B1 replaced = (B1) renamed.get(((Attribute) e).exprId());
      return replaced;
    }
  }
}
