package io.flightgw.paimon;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.data.BinaryArray;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.index.DeletionVectorMeta;
import org.apache.paimon.index.IndexFileMeta;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.memory.MemorySegmentUtils;
import org.apache.paimon.stats.SimpleStats;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.CommitMessageImpl;

import java.util.ArrayList;
import java.util.Base64;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Paimon commit messages as the Go codec's JSON model (codec/paimon/json.go, Document):
 * the same field names, nulls and row rendering, so the two can be compared field by field.
 */
final class JsonModel {
    private static final JsonNodeFactory F = JsonNodeFactory.instance;
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    /** Gives the field types of each row in document order, or null for none. */
    private final Function<BinaryRow, String[]> types;

    JsonModel(Function<BinaryRow, String[]> types) {
        this.types = types;
    }

    ObjectNode document(int version, List<CommitMessage> messages) {
        ObjectNode d = F.objectNode();
        d.put("version", version);
        ArrayNode ms = d.putArray("messages");
        for (CommitMessage cm : messages) {
            CommitMessageImpl m = (CommitMessageImpl) cm;
            ObjectNode o = ms.addObject();
            o.set("partition", row(m.partition()));
            o.put("bucket", m.bucket());
            if (m.totalBuckets() == null) {
                o.putNull("totalBuckets");
            } else {
                o.put("totalBuckets", m.totalBuckets());
            }
            // Rows are visited in the order of Go's Document.Rows: partition, then the data
            // files of each list in turn.
            ObjectNode di = o.putObject("dataIncrement");
            ObjectNode ci = o.putObject("compactIncrement");
            di.set("newFiles", files(m.newFilesIncrement().newFiles()));
            di.set("deletedFiles", files(m.newFilesIncrement().deletedFiles()));
            di.set("changelogFiles", files(m.newFilesIncrement().changelogFiles()));
            di.set("newIndexFiles", indexes(m.newFilesIncrement().newIndexFiles()));
            di.set("deletedIndexFiles", indexes(m.newFilesIncrement().deletedIndexFiles()));
            ci.set("compactBefore", files(m.compactIncrement().compactBefore()));
            ci.set("compactAfter", files(m.compactIncrement().compactAfter()));
            ci.set("changelogFiles", files(m.compactIncrement().changelogFiles()));
            ci.set("newIndexFiles", indexes(m.compactIncrement().newIndexFiles()));
            ci.set("deletedIndexFiles", indexes(m.compactIncrement().deletedIndexFiles()));
        }
        return d;
    }

    static String hex(byte[] b) {
        char[] out = new char[b.length * 2];
        for (int k = 0; k < b.length; k++) {
            out[2 * k] = HEX[(b[k] >> 4) & 0xf];
            out[2 * k + 1] = HEX[b[k] & 0xf];
        }
        return new String(out);
    }

    private ObjectNode row(BinaryRow r) {
        ObjectNode o = F.objectNode();
        o.put("arity", r.getFieldCount());
        o.put("hex", hex(MemorySegmentUtils.copyToBytes(r.getSegments(), r.getOffset(), r.getSizeInBytes())));
        String[] ts = types.apply(r);
        if (ts != null) {
            ArrayNode tn = o.putArray("types");
            for (String t : ts) {
                tn.add(t);
            }
            o.set("values", Types.values(r, ts));
        }
        return o;
    }

    private ArrayNode files(List<DataFileMeta> files) {
        ArrayNode out = F.arrayNode();
        for (DataFileMeta f : files) {
            ObjectNode o = out.addObject();
            o.put("fileName", f.fileName());
            o.put("fileSize", f.fileSize());
            o.put("rowCount", f.rowCount());
            o.set("minKey", row(f.minKey()));
            o.set("maxKey", row(f.maxKey()));
            o.set("keyStats", stats(f.keyStats()));
            o.set("valueStats", stats(f.valueStats()));
            o.put("minSequenceNumber", f.minSequenceNumber());
            o.put("maxSequenceNumber", f.maxSequenceNumber());
            o.put("schemaId", f.schemaId());
            o.put("level", f.level());
            o.set("extraFiles", strings(f.extraFiles()));
            if (f.creationTime() == null) {
                o.putNull("creationTime");
            } else {
                o.put("creationTime", f.creationTime().getMillisecond());
            }
            o.set("deleteRowCount", f.deleteRowCount().map(v -> (JsonNode) F.numberNode(v)).orElse(F.nullNode()));
            o.set("embeddedIndex", bytes(f.embeddedIndex()));
            o.set("fileSource", f.fileSource().map(s -> (JsonNode) F.numberNode((long) s.toByteValue())).orElse(F.nullNode()));
            o.set("valueStatsCols", strings(f.valueStatsCols()));
            o.set("externalPath", f.externalPath().map(s -> (JsonNode) F.textNode(s)).orElse(F.nullNode()));
            o.set("firstRowId", f.firstRowId() == null ? F.nullNode() : F.numberNode(f.firstRowId()));
            o.set("writeCols", strings(f.writeCols()));
        }
        return out;
    }

    private ObjectNode stats(SimpleStats s) {
        ObjectNode o = F.objectNode();
        o.set("minValues", row(s.minValues()));
        o.set("maxValues", row(s.maxValues()));
        ArrayNode nc = o.putArray("nullCounts");
        BinaryArray a = s.nullCounts();
        for (int k = 0; k < a.size(); k++) {
            if (a.isNullAt(k)) {
                nc.addNull();
            } else {
                nc.add(a.getLong(k));
            }
        }
        return o;
    }

    private ArrayNode indexes(List<IndexFileMeta> files) {
        ArrayNode out = F.arrayNode();
        for (IndexFileMeta f : files) {
            ObjectNode o = out.addObject();
            o.put("indexType", f.indexType());
            o.put("fileName", f.fileName());
            o.put("fileSize", f.fileSize());
            o.put("rowCount", f.rowCount());
            if (f.dvRanges() == null) {
                o.putNull("dvRanges");
            } else {
                ArrayNode dvs = o.putArray("dvRanges");
                for (Map.Entry<String, DeletionVectorMeta> e : f.dvRanges().entrySet()) {
                    DeletionVectorMeta dv = e.getValue();
                    ObjectNode d = dvs.addObject();
                    d.put("dataFileName", dv.dataFileName());
                    d.put("offset", dv.offset());
                    d.put("length", dv.length());
                    if (dv.cardinality() == null) {
                        d.putNull("cardinality");
                    } else {
                        d.put("cardinality", dv.cardinality());
                    }
                }
            }
            o.set("externalPath", f.externalPath() == null ? F.nullNode() : F.textNode(f.externalPath()));
            o.set("globalIndex", Compat.globalIndexJson(f));
        }
        return out;
    }

    static JsonNode strings(List<String> l) {
        if (l == null) {
            return F.nullNode();
        }
        ArrayNode a = F.arrayNode();
        l.forEach(a::add);
        return a;
    }

    static JsonNode bytes(byte[] b) {
        return b == null ? F.nullNode() : F.textNode(Base64.getEncoder().encodeToString(b));
    }

    /** The types arrays of the rows of a Go-model document, in document order. */
    static List<String[]> rowTypes(JsonNode doc) {
        List<String[]> out = new ArrayList<>();
        for (JsonNode m : doc.get("messages")) {
            out.add(types(m.get("partition")));
            for (String list : new String[] {"dataIncrement/newFiles", "dataIncrement/deletedFiles",
                    "dataIncrement/changelogFiles", "compactIncrement/compactBefore",
                    "compactIncrement/compactAfter", "compactIncrement/changelogFiles"}) {
                for (JsonNode f : m.at("/" + list)) {
                    out.add(types(f.get("minKey")));
                    out.add(types(f.get("maxKey")));
                    out.add(types(f.at("/keyStats/minValues")));
                    out.add(types(f.at("/keyStats/maxValues")));
                    out.add(types(f.at("/valueStats/minValues")));
                    out.add(types(f.at("/valueStats/maxValues")));
                }
            }
        }
        return out;
    }

    private static String[] types(JsonNode row) {
        JsonNode t = row == null ? null : row.get("types");
        if (t == null || t.isNull()) {
            return null;
        }
        String[] out = new String[t.size()];
        for (int k = 0; k < out.length; k++) {
            out[k] = t.get(k).asText();
        }
        return out;
    }

    /** Returns null when equal, else the path of the first difference and both values. */
    static String diff(String path, JsonNode want, JsonNode got) {
        if (want.isNumber() && got.isNumber()) {
            return want.decimalValue().compareTo(got.decimalValue()) == 0 ? null : path + ": want " + want + ", got " + got;
        }
        if (want.isObject() && got.isObject()) {
            List<String> names = new ArrayList<>();
            want.fieldNames().forEachRemaining(names::add);
            Iterator<String> it = got.fieldNames();
            while (it.hasNext()) {
                String n = it.next();
                if (!want.has(n) && !(path.isEmpty() && n.equals("description"))) {
                    return path + "/" + n + ": unexpected field";
                }
            }
            for (String n : names) {
                if (path.isEmpty() && n.equals("description")) {
                    continue;
                }
                if (!got.has(n)) {
                    return path + "/" + n + ": missing";
                }
                String d = diff(path + "/" + n, want.get(n), got.get(n));
                if (d != null) {
                    return d;
                }
            }
            return null;
        }
        if (want.isArray() && got.isArray()) {
            if (want.size() != got.size()) {
                return path + ": want " + want.size() + " elements, got " + got.size();
            }
            for (int k = 0; k < want.size(); k++) {
                String d = diff(path + "/" + k, want.get(k), got.get(k));
                if (d != null) {
                    return d;
                }
            }
            return null;
        }
        return want.equals(got) ? null : path + ": want " + want + ", got " + got;
    }
}
