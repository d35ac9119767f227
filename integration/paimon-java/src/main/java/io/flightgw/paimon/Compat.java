package io.flightgw.paimon;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.index.DeletionVectorMeta;
import org.apache.paimon.index.IndexFileMeta;

import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.util.LinkedHashMap;

/**
 * The global index (GlobalIndexMeta) appeared in Paimon 1.4 (serializer version 11) and
 * gained source metadata in 2.0 (version 12). One source tree compiles against every
 * release, so those parts are reached by reflection.
 */
final class Compat {
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    static Class<?> globalIndexClass() {
        try {
            return Class.forName("org.apache.paimon.index.GlobalIndexMeta");
        } catch (ClassNotFoundException e) {
            return null;
        }
    }

    static boolean hasSourceMeta() {
        Class<?> c = globalIndexClass();
        if (c == null) {
            return false;
        }
        try {
            c.getMethod("sourceMeta");
            return true;
        } catch (NoSuchMethodException e) {
            return false;
        }
    }

    static IndexFileMeta globalIndexFile(String type, String name, long size, long rows,
            long start, long end, int fieldId, int[] extra, byte[] meta, byte[] source) {
        try {
            Class<?> g = globalIndexClass();
            Object gm;
            if (hasSourceMeta()) {
                gm = g.getConstructor(long.class, long.class, int.class, int[].class, byte[].class, byte[].class)
                        .newInstance(start, end, fieldId, extra, meta, source);
            } else {
                gm = g.getConstructor(long.class, long.class, int.class, int[].class, byte[].class)
                        .newInstance(start, end, fieldId, extra, meta);
            }
            Constructor<IndexFileMeta> c = IndexFileMeta.class.getConstructor(String.class, String.class,
                    long.class, long.class, LinkedHashMap.class, String.class, g);
            return c.newInstance(type, name, size, rows, null, null, gm);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("global index needs Paimon 1.4 or later", e);
        }
    }

    static JsonNode globalIndexJson(IndexFileMeta f) {
        Object g;
        try {
            Method m = IndexFileMeta.class.getMethod("globalIndexMeta");
            g = m.invoke(f);
        } catch (NoSuchMethodException e) {
            return F.nullNode();
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
        if (g == null) {
            return F.nullNode();
        }
        try {
            Class<?> c = g.getClass();
            ObjectNode o = F.objectNode();
            o.put("rowRangeStart", (Long) c.getMethod("rowRangeStart").invoke(g));
            o.put("rowRangeEnd", (Long) c.getMethod("rowRangeEnd").invoke(g));
            o.put("indexFieldId", (Integer) c.getMethod("indexFieldId").invoke(g));
            int[] extra = (int[]) c.getMethod("extraFieldIds").invoke(g);
            if (extra == null) {
                o.putNull("extraFieldIds");
            } else {
                ArrayNode a = o.putArray("extraFieldIds");
                for (int v : extra) {
                    a.add(v);
                }
            }
            o.set("indexMeta", JsonModel.bytes((byte[]) c.getMethod("indexMeta").invoke(g)));
            o.set("sourceMeta", hasSourceMeta()
                    ? JsonModel.bytes((byte[]) c.getMethod("sourceMeta").invoke(g))
                    : F.nullNode());
            return o;
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    static DeletionVectorMeta dv(String file, int offset, int length, Long cardinality) {
        return new DeletionVectorMeta(file, offset, length, cardinality);
    }
}
