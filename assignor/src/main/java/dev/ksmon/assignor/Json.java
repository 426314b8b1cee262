package dev.ksmon.assignor;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** A strict reader of the JSON the loads record and the shared test cases use: objects, arrays, strings, numbers. */
final class Json {
    private final String text;
    private int at;

    Json(String text) {
        this.text = text == null ? "" : text;
    }

    Object document() {
        Object value = value();
        space();
        if (at != text.length()) {
            throw new IllegalArgumentException("trailing text at " + at);
        }
        return value;
    }

    private Object value() {
        space();
        if (at >= text.length()) {
            throw new IllegalArgumentException("unexpected end");
        }
        char c = text.charAt(at);
        if (c == '{') {
            return object();
        }
        if (c == '"') {
            return string();
        }
        if (c == '[') {
            return array();
        }
        int start = at;
        while (at < text.length() && "+-0123456789.eE".indexOf(text.charAt(at)) >= 0) {
            at++;
        }
        if (start == at) {
            String word = text.substring(at, Math.min(text.length(), at + 5));
            for (String literal : new String[] {"true", "false", "null"}) {
                if (word.startsWith(literal)) {
                    at += literal.length();
                    return literal;
                }
            }
            throw new IllegalArgumentException("unexpected '" + c + "' at " + at);
        }
        try {
            return Double.parseDouble(text.substring(start, at));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("bad number at " + start);
        }
    }

    private Map<String, Object> object() {
        Map<String, Object> map = new LinkedHashMap<>();
        at++;
        space();
        if (peek() == '}') {
            at++;
            return map;
        }
        while (true) {
            space();
            if (peek() != '"') {
                throw new IllegalArgumentException("expected a key at " + at);
            }
            String key = string();
            space();
            expect(':');
            map.put(key, value());
            space();
            if (peek() == ',') {
                at++;
                continue;
            }
            expect('}');
            return map;
        }
    }

    private List<Object> array() {
        List<Object> list = new ArrayList<>();
        at++;
        space();
        if (peek() == ']') {
            at++;
            return list;
        }
        while (true) {
            list.add(value());
            space();
            if (peek() == ',') {
                at++;
                continue;
            }
            expect(']');
            return list;
        }
    }

    private String string() {
        StringBuilder out = new StringBuilder();
        at++;
        while (at < text.length()) {
            char c = text.charAt(at++);
            if (c == '"') {
                return out.toString();
            }
            if (c == '\\') {
                if (at >= text.length()) {
                    break;
                }
                char e = text.charAt(at++);
                switch (e) {
                    case 'n' -> out.append('\n');
                    case 't' -> out.append('\t');
                    case 'u' -> {
                        if (at + 4 > text.length()) {
                            throw new IllegalArgumentException("bad escape at " + at);
                        }
                        out.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
                        at += 4;
                    }
                    default -> out.append(e);
                }
            } else {
                out.append(c);
            }
        }
        throw new IllegalArgumentException("unterminated string");
    }

    private char peek() {
        return at < text.length() ? text.charAt(at) : '\0';
    }

    private void expect(char c) {
        if (peek() != c) {
            throw new IllegalArgumentException("expected '" + c + "' at " + at);
        }
        at++;
    }

    private void space() {
        while (at < text.length() && Character.isWhitespace(text.charAt(at))) {
            at++;
        }
    }
}
