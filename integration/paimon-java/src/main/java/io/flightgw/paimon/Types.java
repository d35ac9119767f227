package io.flightgw.paimon;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.InternalArray;
import org.apache.paimon.data.InternalMap;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.types.ArrayType;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.MapType;
import org.apache.paimon.types.RowType;

import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

/**
 * The type spelling of the Go codec's JSON model (paimon.ParseType), and Paimon internal
 * values rendered the way paimon.ValueToJSON renders them, so both sides compare equal.
 */
final class Types {
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    private final String s;
    private int i;

    private Types(String s) {
        this.s = s;
    }

    static DataType parse(String s) {
        Types p = new Types(s);
        DataType t = p.type();
        p.space();
        if (p.i != s.length()) {
            throw new IllegalArgumentException("type " + s + ": trailing " + s.substring(p.i));
        }
        return t;
    }

    static RowType rowType(String[] types) {
        List<DataField> fields = new ArrayList<>();
        for (int k = 0; k < types.length; k++) {
            fields.add(new DataField(k, "f" + k, parse(types[k])));
        }
        return new RowType(fields);
    }

    private void space() {
        while (i < s.length() && s.charAt(i) == ' ') {
            i++;
        }
    }

    private String word() {
        space();
        int j = i;
        while (i < s.length() && (Character.isLetter(s.charAt(i)) || s.charAt(i) == '_')) {
            i++;
        }
        return s.substring(j, i).toUpperCase();
    }

    private boolean eat(char c) {
        space();
        if (i < s.length() && s.charAt(i) == c) {
            i++;
            return true;
        }
        return false;
    }

    private int num() {
        space();
        int j = i;
        while (i < s.length() && Character.isDigit(s.charAt(i))) {
            i++;
        }
        return Integer.parseInt(s.substring(j, i));
    }

    private void expect(char c) {
        if (!eat(c)) {
            throw new IllegalArgumentException("type " + s + ": expected " + c + " at " + i);
        }
    }

    private DataType type() {
        String w = word();
        switch (w) {
            case "ARRAY": {
                expect('<');
                DataType e = type();
                expect('>');
                return DataTypes.ARRAY(e);
            }
            case "MAP": {
                expect('<');
                DataType k = type();
                expect(',');
                DataType v = type();
                expect('>');
                return DataTypes.MAP(k, v);
            }
            case "ROW": {
                expect('<');
                List<DataField> fields = new ArrayList<>();
                if (!eat('>')) {
                    do {
                        fields.add(new DataField(fields.size(), "f" + fields.size(), type()));
                    } while (eat(','));
                    expect('>');
                }
                return new RowType(fields);
            }
            case "BOOLEAN":
                return DataTypes.BOOLEAN();
            case "TINYINT":
                return DataTypes.TINYINT();
            case "SMALLINT":
                return DataTypes.SMALLINT();
            case "INT":
            case "INTEGER":
                return DataTypes.INT();
            case "BIGINT":
                return DataTypes.BIGINT();
            case "FLOAT":
                return DataTypes.FLOAT();
            case "DOUBLE":
                return DataTypes.DOUBLE();
            case "DATE":
                return DataTypes.DATE();
            case "TIME":
                return DataTypes.TIME();
            case "STRING":
                return DataTypes.STRING();
            case "BYTES":
                return DataTypes.BYTES();
            case "DECIMAL": {
                expect('(');
                int p = num();
                expect(',');
                int sc = num();
                expect(')');
                return DataTypes.DECIMAL(p, sc);
            }
            case "TIMESTAMP":
            case "TIMESTAMP_LTZ": {
                expect('(');
                int p = num();
                expect(')');
                return w.equals("TIMESTAMP")
                        ? DataTypes.TIMESTAMP(p)
                        : DataTypes.TIMESTAMP_WITH_LOCAL_TIME_ZONE(p);
            }
            default:
                throw new IllegalArgumentException("type " + s + ": unknown " + w);
        }
    }

    /** Renders the fields of row with the given types. */
    static ArrayNode values(InternalRow row, String[] types) {
        ArrayNode out = F.arrayNode();
        for (int k = 0; k < types.length; k++) {
            DataType t = parse(types[k]);
            out.add(value(InternalRow.createFieldGetter(t, k).getFieldOrNull(row), t));
        }
        return out;
    }

    static JsonNode value(Object v, DataType t) {
        if (v == null) {
            return F.nullNode();
        }
        if (v instanceof Boolean) {
            return F.booleanNode((Boolean) v);
        }
        if (v instanceof Byte || v instanceof Short || v instanceof Integer || v instanceof Long) {
            return F.numberNode(((Number) v).longValue());
        }
        if (v instanceof Float || v instanceof Double) {
            double d = ((Number) v).doubleValue();
            if (Double.isNaN(d)) {
                return F.textNode("NaN");
            }
            if (Double.isInfinite(d)) {
                return F.textNode(d > 0 ? "Infinity" : "-Infinity");
            }
            return F.numberNode(d);
        }
        if (v instanceof BinaryString) {
            return F.textNode(v.toString());
        }
        if (v instanceof byte[]) {
            return F.textNode(Base64.getEncoder().encodeToString((byte[]) v));
        }
        if (v instanceof Decimal) {
            return F.textNode(((Decimal) v).toBigDecimal().toPlainString());
        }
        if (v instanceof Timestamp) {
            ObjectNode o = F.objectNode();
            o.put("millis", ((Timestamp) v).getMillisecond());
            o.put("nanoOfMillis", ((Timestamp) v).getNanoOfMillisecond());
            return o;
        }
        if (t instanceof ArrayType) {
            return array((InternalArray) v, ((ArrayType) t).getElementType());
        }
        if (t instanceof MapType) {
            InternalMap m = (InternalMap) v;
            ArrayNode keys = array(m.keyArray(), ((MapType) t).getKeyType());
            ArrayNode vals = array(m.valueArray(), ((MapType) t).getValueType());
            ArrayNode out = F.arrayNode();
            for (int k = 0; k < keys.size(); k++) {
                out.add(F.arrayNode().add(keys.get(k)).add(vals.get(k)));
            }
            return out;
        }
        if (t instanceof RowType) {
            List<DataType> fts = ((RowType) t).getFieldTypes();
            InternalRow r = (InternalRow) v;
            ArrayNode out = F.arrayNode();
            for (int k = 0; k < fts.size(); k++) {
                out.add(value(InternalRow.createFieldGetter(fts.get(k), k).getFieldOrNull(r), fts.get(k)));
            }
            return out;
        }
        throw new IllegalArgumentException("no JSON for " + v.getClass() + " of " + t);
    }

    private static ArrayNode array(InternalArray a, DataType et) {
        InternalArray.ElementGetter g = InternalArray.createElementGetter(et);
        ArrayNode out = F.arrayNode();
        for (int k = 0; k < a.size(); k++) {
            out.add(value(g.getElementOrNull(a, k), et));
        }
        return out;
    }
}
