// SPDX-License-Identifier: MIT
// core/read/numpyvalue: NumPy scalars and arrays read from a pickle's graph. The fixture's values
// (written by torch 2.14 with NumPy 2) decode as its .expected.json says; damaged values (bytes
// that do not fill the shape, a missing state, an unknown dtype) give a reason, never a value.
#include "core/model/checkpoint.h"
#include "core/read/checkpointreader.h"
#include "core/read/numpyvalue.h"

#include <QTest>

#include <cstring>

using namespace ckpt;

namespace {

const Checkpoint& fixture()
{
    static const Checkpoint checkpoint
        = readCheckpoint(CKPT_SOURCE_DIR "/tests/fixtures/dtype-cast/numpy-values-p2.pt");
    return checkpoint;
}

NodeId valueNode(const Checkpoint& checkpoint, const std::string& path)
{
    for (std::uint32_t index = 1; index < checkpoint.tree.size(); ++index)
        if (checkpoint.treePath(index) == path)
            return checkpoint.tree[index].node;
    return kNoNode;
}

// numpy.dtype(code, False, True) with the state (3, order, ...), built through the graph API.
NodeId addDtype(PickleGraph& graph, std::string_view code, std::string_view order)
{
    const NodeId args[] = {graph.addText(NodeKind::String, code), graph.addScalar(NodeKind::Bool, 0),
        graph.addScalar(NodeKind::Bool, 1)};
    const NodeId call
        = graph.addCall(NodeKind::Call, graph.addGlobal("numpy", "dtype"), graph.addTuple(args, 3));
    const NodeId state[] = {graph.addScalar(NodeKind::Int, 3), graph.addText(NodeKind::String, order)};
    graph.ensureBody(call).states.push_back(graph.addTuple(state, 2));
    return call;
}

NodeId addScalar(PickleGraph& graph, std::string_view code, std::string_view order, std::string_view bytes)
{
    const NodeId args[] = {addDtype(graph, code, order), graph.addText(NodeKind::Bytes, bytes)};
    return graph.addCall(
        NodeKind::Call, graph.addGlobal("numpy.core.multiarray", "scalar"), graph.addTuple(args, 2));
}

} // namespace

class TestNumpyValue : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void readsTheFixturesValues()
    {
        const Checkpoint& checkpoint = fixture();
        QVERIFY(!checkpoint.hasErrors());
        auto scalar = decodeNumpyValue(checkpoint.graph, valueNode(checkpoint, "s_int16"));
        QVERIFY(scalar);
        QVERIFY(!scalar->array);
        QCOMPARE(scalar->torchDtype, std::string("int16"));
        QCOMPARE(scalar->bytes, (ByteBuffer {7, 0}));
        // Protocol 2: the bytes come as _codecs.encode(text, 'latin1'); a big-endian array is swapped.
        auto big = decodeNumpyValue(checkpoint.graph, valueNode(checkpoint, "a_big_endian_i8"));
        QVERIFY(big);
        QCOMPARE(big->shape, (std::vector<std::int64_t> {3}));
        std::int64_t values[3];
        std::memcpy(values, big->bytes.data(), sizeof values);
        QCOMPARE(values[0], std::int64_t(1));
        QCOMPARE(values[1], std::int64_t(-2));
        QCOMPARE(values[2], std::int64_t(1) << 40);
        auto fortran = decodeNumpyValue(checkpoint.graph, valueNode(checkpoint, "a_float32_fortran"));
        QVERIFY(fortran && fortran->fortran);
        QCOMPARE(fortran->shape, (std::vector<std::int64_t> {3, 4}));
        auto empty = decodeNumpyValue(checkpoint.graph, valueNode(checkpoint, "a_empty"));
        QVERIFY(empty && empty->bytes.empty()); // protocol 2's bytes() for no bytes
        auto strings = decodeNumpyValue(checkpoint.graph, valueNode(checkpoint, "x_strings"));
        QVERIFY(!strings);
        QVERIFY(strings.error().message.find("holds no plain numbers") != std::string::npos);
    }

    void damagedValuesGiveAReason()
    {
        PickleGraph graph;
        auto shortBytes
            = decodeNumpyValue(graph, addScalar(graph, "f8", "<", std::string_view("\0\0\0\0", 4)));
        QVERIFY(!shortBytes);
        QVERIFY2(shortBytes.error().message.find("4 bytes where its shape needs 8") != std::string::npos,
            shortBytes.error().message.c_str());
        auto unknown = decodeNumpyValue(graph, addScalar(graph, "V3", "|", "abc"));
        QVERIFY(!unknown);
        auto bigEndian
            = decodeNumpyValue(graph, addScalar(graph, "i4", ">", std::string_view("\0\0\1\2", 4)));
        QVERIFY(bigEndian);
        QCOMPARE(bigEndian->bytes, (ByteBuffer {2, 1, 0, 0}));
        // An array without its BUILD state.
        const NodeId args[] = {graph.addGlobal("numpy", "ndarray")};
        const NodeId bare = graph.addCall(NodeKind::Call,
            graph.addGlobal("numpy._core.multiarray", "_reconstruct"), graph.addTuple(args, 1));
        auto stateless = decodeNumpyValue(graph, bare);
        QVERIFY(!stateless);
        QVERIFY(stateless.error().message.find("without its state") != std::string::npos);
        QVERIFY(!decodeNumpyValue(graph, graph.addScalar(NodeKind::Int, 3)));
    }
};

QTEST_GUILESS_MAIN(TestNumpyValue)
#include "tst_numpyvalue.moc"
