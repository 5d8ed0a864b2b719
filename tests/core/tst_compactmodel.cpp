// SPDX-License-Identifier: MIT
// The compact field types of the model (issue 13): interned strings for the names every tensor
// repeats and inline vectors for shapes and index lists. They replace std::string and std::vector
// in TensorEntry, StorageRecord and TreeNode, so they must read, compare, order and copy exactly as
// those did: the model's output is pinned byte for byte by the reader and CLI suites, and these
// pin the types themselves, including their edges (empty, the inline-to-heap step, threads).
#include "core/base/inlinevector.h"
#include "core/base/internedstring.h"
#include "core/base/joinedtext.h"
#include "core/base/raretext.h"
#include "core/model/checkpoint.h" // CompactText, SlimText, PackedOptional (not included first: moc stops at <compare>)
#include "core/model/checkpointjson.h"
#include "core/pickle/picklegraph.h"
#include "core/read/checkpointbuilder.h"

#include <QTest>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>
#include <thread>

using namespace ckpt;
using namespace std::string_literals;
using namespace std::string_view_literals;

class TestCompactModel : public QObject {
    Q_OBJECT

    // A state_dict of `tensors` float tensors of four elements, as torch.save pickles one: {name:
    // _rebuild_tensor_v2(persistent_id(('storage', FloatStorage, key, 'cpu', 4)), 0, (4,), (1,),
    // False, OrderedDict())}. Returns its root.
    static NodeId addStateDict(PickleGraph& graph, int tensors)
    {
        const NodeId rebuild = graph.addGlobal("torch._utils", "_rebuild_tensor_v2");
        const NodeId storageClass = graph.addGlobal("torch", "FloatStorage");
        const NodeId orderedDict = graph.addGlobal("collections", "OrderedDict");
        const NodeId storageTag = graph.addText(NodeKind::String, "storage");
        const NodeId cpu = graph.addText(NodeKind::String, "cpu");
        const NodeId root = graph.addContainer(NodeKind::Dict);
        const NodeId zero = graph.addScalar(NodeKind::Int, 0);
        const NodeId one = graph.addScalar(NodeKind::Int, 1);
        const NodeId four = graph.addScalar(NodeKind::Int, 4);
        for (int i = 0; i < tensors; ++i) {
            const std::string name = "layers." + std::to_string(i / 2) + (i % 2 ? ".bias" : ".weight");
            const NodeId nameNode = graph.addText(NodeKind::String, name);
            const NodeId key = graph.addText(NodeKind::String, std::to_string(i));
            const std::array<NodeId, 5> storage {storageTag, storageClass, key, cpu, four};
            const NodeId pid = graph.addPersistentId(graph.addTuple(storage.data(), storage.size()));
            const NodeId size = graph.addTuple(&four, 1);
            const NodeId stride = graph.addTuple(&one, 1);
            const NodeId hooks = graph.addCall(NodeKind::Call, orderedDict, graph.addTuple(nullptr, 0));
            const std::array<NodeId, 6> arguments {
                pid, zero, size, stride, graph.addScalar(NodeKind::Bool, 0), hooks};
            const NodeId tensor
                = graph.addCall(NodeKind::Call, rebuild, graph.addTuple(arguments.data(), arguments.size()));
            ContainerBody& body = graph.ensureBody(root);
            body.dictItems.push_back(nameNode);
            body.dictItems.push_back(tensor);
        }
        return root;
    }

private Q_SLOTS:
    void equalTextsShareOneString()
    {
        const std::string built = std::string("torch._utils.") + "_rebuild_tensor_v2";
        const InternedString a("torch._utils._rebuild_tensor_v2");
        const InternedString b(built);
        QCOMPARE(&a.str(), &b.str());
        QVERIFY(a == b);
        QVERIFY(a != InternedString("torch._utils._rebuild_parameter"));
        QCOMPARE(a.str(), built);
        QCOMPARE(a.size(), built.size());
    }

    void emptyIsTheDefault()
    {
        const InternedString none;
        QVERIFY(none.empty());
        QVERIFY(none == InternedString(""));
        QVERIFY(none == InternedString(std::string()));
        QCOMPARE(none.str(), std::string());
        QVERIFY(none == "");
    }

    void comparesAndOrdersAsText()
    {
        const InternedString f32("float32");
        QVERIFY(f32 == "float32");
        QVERIFY("float32" == f32);
        QVERIFY(f32 == std::string("float32"));
        QVERIFY(f32 == std::string_view("float32"));
        QVERIFY(f32 != "float16");
        // Ordered by text, whatever order the texts were interned in.
        const InternedString later("zzz-interned-first");
        const InternedString earlier("aaa-interned-second");
        QVERIFY(earlier < later);
        QVERIFY(later > earlier);
        QVERIFY(f32 < "float64");
        std::map<InternedString, int> byName {{later, 1}, {earlier, 2}};
        QCOMPARE(byName.begin()->first.str(), std::string("aaa-interned-second"));
    }

    void readsLikeAString()
    {
        const InternedString device("cuda:1");
        std::string copy = device; // a copy of its own, not a view of the pool
        copy += '!';
        QCOMPARE(copy, std::string("cuda:1!"));
        QCOMPARE(device.str(), std::string("cuda:1"));
        QCOMPARE("on " + device, std::string("on cuda:1"));
        QCOMPARE(device + "!", std::string("cuda:1!"));
        std::string appended = "x";
        appended += device;
        QCOMPARE(appended, std::string("xcuda:1"));
        QVERIFY(device.starts_with("cuda"));
        QCOMPARE(device.find(':'), std::size_t(4));
        const std::optional<InternedString> tag = device;
        const std::optional<std::string> asString = tag;
        QCOMPARE(*asString, std::string("cuda:1"));
        QCOMPARE(std::optional<InternedString>().value_or("(none)").str(), std::string("(none)"));
    }

    void threadsAgreeOnOneString()
    {
        // Files are read in jobs: two threads interning the same new text get the same string.
        std::array<InternedString, 4> results;
        std::vector<std::thread> threads;
        threads.reserve(results.size());
        for (InternedString& result : results)
            threads.emplace_back([&result] {
                for (int i = 0; i < 2000; ++i)
                    result = InternedString("thread-text-" + std::to_string(i % 37));
            });
        for (auto& thread : threads)
            thread.join();
        for (const InternedString& result : results)
            QCOMPARE(&result.str(), &results[0].str());
        QCOMPARE(results[0].str(), std::string("thread-text-") + std::to_string(1999 % 37));
    }

    void inlineVectorStaysInlineThenGrows()
    {
        InlineVector<std::int64_t, 4> shape;
        QVERIFY(shape.empty());
        for (std::int64_t d = 1; d <= 4; ++d)
            shape.push_back(d * 10);
        QCOMPARE(shape.capacity(), std::size_t(4));
        const std::int64_t* inlineData = shape.data();
        QVERIFY(reinterpret_cast<const char*>(inlineData) >= reinterpret_cast<const char*>(&shape)
            && reinterpret_cast<const char*>(inlineData) < reinterpret_cast<const char*>(&shape + 1));
        for (std::int64_t d = 5; d <= 9; ++d)
            shape.push_back(d * 10);
        QCOMPARE(shape.size(), std::size_t(9));
        QVERIFY(shape.capacity() >= 9);
        for (std::size_t i = 0; i < shape.size(); ++i)
            QCOMPARE(shape[i], std::int64_t(i + 1) * 10);
        QCOMPARE(shape.back(), std::int64_t(90));
    }

    void inlineVectorCopiesMovesAndCompares()
    {
        const std::vector<std::int64_t> big {1, 2, 3, 4, 5, 6, 7};
        InlineVector<std::int64_t, 4> a = big; // on the heap
        InlineVector<std::int64_t, 4> b {2, 3}; // inline
        QVERIFY(a == big);
        QCOMPARE(std::vector<std::int64_t>(a), big);
        InlineVector<std::int64_t, 4> copyA = a;
        InlineVector<std::int64_t, 4> copyB = b;
        QVERIFY(copyA == a && copyB == b);
        QVERIFY(copyA.data() != a.data());
        copyB.push_back(4); // a copy of its own: the original keeps two items
        QCOMPARE(b.size(), std::size_t(2));
        QCOMPARE(copyB.size(), std::size_t(3));
        InlineVector<std::int64_t, 4> moved = std::move(copyA);
        QVERIFY(moved == a);
        QVERIFY(copyA.empty()); // NOLINT(bugprone-use-after-move): the moved-from state is tested
        copyA = b; // reuse after move
        QVERIFY(copyA == b);
        moved = b; // heap back to a short one
        QVERIFY(moved == b);
        moved = std::move(a);
        QVERIFY(moved == big);
        QVERIFY(b > moved); // lexicographic, as std::vector orders
        QVERIFY((InlineVector<std::int64_t, 4> {} < b));
        std::optional<InlineVector<std::int64_t, 4>> stride;
        stride = std::optional<std::vector<std::int64_t>>(std::vector<std::int64_t> {4, 1});
        QVERIFY(stride && (*stride == std::vector<std::int64_t>({4, 1})));
    }

    void inlineVectorIndexLists()
    {
        InlineVector<std::uint32_t, 2> tensors;
        tensors.push_back(7);
        tensors.push_back(8);
        QCOMPARE(sizeof tensors, std::size_t(16));
        tensors.push_back(9);
        QCOMPARE(std::vector<std::uint32_t>(tensors.rbegin(), tensors.rend()),
            (std::vector<std::uint32_t> {9, 8, 7}));
        tensors.pop_back();
        tensors.pop_back();
        QCOMPARE(tensors.size(), std::size_t(1));
        tensors.clear();
        QVERIFY(tensors.empty());
        tensors.resize(3, 5);
        QVERIFY(tensors == std::vector<std::uint32_t>({5, 5, 5}));
    }

    // A pickle node is 16 bytes: the fields a kind does not use share their room. Every kind must
    // still give back exactly what was put in, whatever its neighbours hold, including the values
    // that fill all 64 bits (the extreme ints, a NaN's payload, -0.0).
    void pickleNodesKeepWhatEachKindHolds()
    {
        QCOMPARE(sizeof(PickleNode), std::size_t(16));
        PickleGraph graph;
        const NodeId none = graph.addScalar(NodeKind::None, 0);
        const NodeId minimum = graph.addScalar(NodeKind::Int, std::numeric_limits<std::int64_t>::min());
        const NodeId maximum = graph.addScalar(NodeKind::Int, std::numeric_limits<std::int64_t>::max());
        const NodeId truth = graph.addScalar(NodeKind::Bool, 1);
        const NodeId extension = graph.addScalar(NodeKind::Extension, -7);
        const double nan = std::bit_cast<double>(std::uint64_t(0x7ff8'dead'beef'0001));
        const NodeId nanNode = graph.addFloat(nan);
        const NodeId negativeZero = graph.addFloat(-0.0);
        const NodeId text = graph.addText(NodeKind::String, "model.encoder.0.weight");
        const NodeId bytes
            = graph.addText(NodeKind::Bytes, std::string_view("\0\xff", 2), FlagReadOnlyBuffer);
        const NodeId global = graph.addGlobal("torch._utils", "_rebuild_tensor_v2");
        const NodeId otherGlobal = graph.addGlobal("collections", "OrderedDict");
        const std::array<NodeId, 3> items {minimum, text, global};
        const NodeId tuple = graph.addTuple(items.data(), items.size());
        const NodeId emptyTuple = graph.addTuple(nullptr, 0);
        const NodeId call = graph.addCall(NodeKind::Call, global, tuple);
        const NodeId object = graph.addCall(NodeKind::NewObject, otherGlobal, emptyTuple);
        const NodeId dict = graph.addContainer(NodeKind::Dict);
        const NodeId list = graph.addContainer(NodeKind::List);
        const NodeId pid = graph.addPersistentId(tuple);

        QCOMPARE(graph.kind(none), NodeKind::None);
        QCOMPARE(graph.intValue(minimum), std::numeric_limits<std::int64_t>::min());
        QCOMPARE(graph.intValue(maximum), std::numeric_limits<std::int64_t>::max());
        QCOMPARE(graph.intValue(truth), std::int64_t(1));
        QCOMPARE(graph.node(extension).value, std::int64_t(-7));
        QCOMPARE(
            std::bit_cast<std::uint64_t>(graph.floatValue(nanNode)), std::uint64_t(0x7ff8'dead'beef'0001));
        QVERIFY(std::signbit(graph.floatValue(negativeZero)));
        QCOMPARE(graph.text(text), std::string_view("model.encoder.0.weight"));
        QCOMPARE(graph.text(bytes), std::string_view("\0\xff", 2));
        QCOMPARE(graph.node(bytes).flags, std::uint8_t(FlagReadOnlyBuffer));
        QCOMPARE(graph.module(global), std::string_view("torch._utils"));
        QCOMPARE(graph.name(global), std::string_view("_rebuild_tensor_v2"));
        QCOMPARE(graph.qualifiedName(otherGlobal), std::string("collections.OrderedDict"));
        QCOMPARE(graph.text(global), std::string_view()); // not a text kind
        QCOMPARE(graph.sequence(tuple), (std::vector<NodeId> {minimum, text, global}));
        QCOMPARE(graph.tupleSize(emptyTuple), std::size_t(0));
        QCOMPARE(graph.tupleItem(tuple, 2), global);
        QCOMPARE(graph.tupleItem(tuple, 3), kNoNode);
        QCOMPARE(graph.callee(call), global);
        QCOMPARE(graph.arguments(call), tuple);
        QCOMPARE(graph.calleeName(object), std::string("collections.OrderedDict"));
        QCOMPARE(graph.arguments(object), emptyTuple);
        QCOMPARE(graph.persistentIdPayload(pid), tuple);
        // A call has no body until something is added to it, and keeps its callee and arguments
        // once it has one.
        QVERIFY(graph.bodyOf(call) == nullptr);
        graph.ensureBody(call).states.push_back(dict);
        graph.ensureBody(list).items.push_back(truth);
        graph.ensureBody(dict).dictItems = {text, call};
        QCOMPARE(graph.bodyOf(call)->states, std::vector<NodeId> {dict});
        QCOMPARE(graph.callee(call), global);
        QCOMPARE(graph.arguments(call), tuple);
        QCOMPARE(graph.sequence(list), std::vector<NodeId> {truth});
        QCOMPARE(graph.bodyOf(dict)->dictItems, (std::vector<NodeId> {text, call}));
        QVERIFY(graph.bodyOf(tuple) == nullptr);
        QVERIFY(graph.bodyOf(minimum) == nullptr);
        // Accessors asked about the wrong kind answer empty, as before.
        QCOMPARE(graph.callee(tuple), kNoNode);
        QCOMPARE(graph.persistentIdPayload(call), kNoNode);
        QCOMPARE(graph.intValue(text), std::int64_t(0));
        QCOMPARE(graph.tupleSize(call), std::size_t(0));
    }

    // The per-tensor records are ordered without padding; these sizes are what a million tensors
    // pay per field, so growing them should be a decision, not an accident.
    // The stride: none is a capacity of 0, and every way in and out of that state must keep it.
    void optionalInlineVectorReadsAsOptional()
    {
        using Optional = OptionalInlineVector<std::int64_t, 4>;
        static_assert(sizeof(Optional) == sizeof(InlineVector<std::int64_t, 4>));
        Optional none;
        QVERIFY(!none && !none.has_value());
        QVERIFY(none == std::nullopt);
        Optional small = std::vector<std::int64_t> {3, 1};
        QVERIFY(small.has_value());
        QCOMPARE(small->size(), std::size_t(2));
        QVERIFY(small == std::optional<std::vector<std::int64_t>>({3, 1}));
        QVERIFY(!(small == none));
        const std::vector<std::int64_t> big {1, 2, 3, 4, 5, 6};
        Optional onHeap = big;
        QVERIFY(*onHeap == big);
        // Assigned while none: the items go inline (capacity 4), not onto a heap block of one.
        Optional filled;
        filled = InlineVector<std::int64_t, 4> {7, 8};
        QCOMPARE(filled->capacity(), std::size_t(4));
        QVERIFY(*filled == std::vector<std::int64_t>({7, 8}));
        filled = std::optional<InlineVector<std::int64_t, 4>>();
        QVERIFY(!filled);
        filled = big; // none to the heap
        QVERIFY(*filled == big);
        filled.reset();
        QVERIFY(!filled);
        Optional copyOfNone = none;
        Optional copyOfBig = onHeap;
        QVERIFY(!copyOfNone && copyOfBig == onHeap && copyOfBig->data() != onHeap->data());
        Optional movedNone = std::move(copyOfNone);
        QVERIFY(!movedNone);
        // A moved-from none stays none, as std::optional's does.
        QVERIFY(!copyOfNone); // NOLINT(bugprone-use-after-move): the moved-from state is tested
        Optional movedBig = std::move(copyOfBig);
        QVERIFY(*movedBig == big);
        copyOfBig = none;
        QVERIFY(!copyOfBig);
        copyOfBig = onHeap;
        QVERIFY(copyOfBig == onHeap);
        QVERIFY_THROWS_EXCEPTION(std::bad_optional_access, (void)none.value());
    }

    // A tree node's summary: one pointer, null while empty; reads, compares and joins as a string.
    void rareTextReadsAsString()
    {
        static_assert(sizeof(RareText) == sizeof(void*));
        RareText text;
        QVERIFY(text.empty());
        QCOMPARE(text.str(), std::string());
        text = std::string("'adam'");
        QVERIFY(!text.empty());
        QVERIFY(text == "'adam'");
        QCOMPARE("= " + text, std::string("= 'adam'"));
        QCOMPARE(text + "!", std::string("'adam'!"));
        QCOMPARE(std::string("x") + text, std::string("x'adam'"));
        QVERIFY(text.starts_with("'a"));
        QCOMPARE(text.substr(1, 4), std::string("adam"));
        RareText copy = text;
        QVERIFY(copy == text && &copy.str() != &text.str());
        text = "";
        QVERIFY(text.empty()); // assigning "" empties it: no block for an empty text
        QCOMPARE(copy.str(), std::string("'adam'"));
        text = std::string_view("list of 62 int");
        const std::string& asString = text;
        QCOMPARE(asString, std::string("list of 62 int"));
    }

    // A storage's record name as stem + key: it must order and match exactly as the joined string.
    void joinedTextOrdersAsTheJoinedString()
    {
        const std::vector<std::pair<std::string, std::string>> parts {{"archive/data/", "10"},
            {"archive/data/", "9"}, {"archive/data", "/1"}, {"archive/", "data/1"}, {"", "archive/data/1"},
            {"archive/data/1", ""}, {"archive/data/\xff", ""}, {"archive/data/", "1\x80"}, {"a", "b"},
            {"", ""}, {"ab", ""}, {"a", ""}};
        for (const auto& [ha, ta] : parts) {
            const JoinedText a {ha, ta};
            QCOMPARE(a.str(), ha + ta);
            QCOMPARE(a.empty(), (ha + ta).empty());
            QCOMPARE(a == std::string_view(ha + ta), true);
            for (const auto& [hb, tb] : parts) {
                const JoinedText b {hb, tb};
                const std::string joinedA = ha + ta, joinedB = hb + tb;
                QCOMPARE(a < b, joinedA < joinedB);
                QCOMPARE(a == b, joinedA == joinedB);
                QCOMPARE(a < std::string_view(joinedB), joinedA < joinedB);
                QCOMPARE(std::string_view(joinedB) < a, joinedB < joinedA);
                QCOMPARE(a == std::string_view(joinedB), joinedA == joinedB);
            }
        }
    }

    // A storage record whose name is its stem and key, and one named by its stem alone.
    void storageRecordNamesItsRecord()
    {
        StorageRecord storage;
        storage.key = "constants/12";
        storage.setRecord(InternedString("archive/constants/"), 10);
        QCOMPARE(storage.record(), std::string("archive/constants/12"));
        storage.key = "shard-1.bin:constants/12"; // a shard's key in the union, the same record
        storage.recordKeyStart += 12;
        QCOMPARE(storage.record(), std::string("archive/constants/12"));
        storage.setRecord(InternedString("tar member storages"));
        QCOMPARE(storage.record(), std::string("tar member storages"));
        QVERIFY(StorageRecord().recordName().empty());
    }

    // A storage key and a tree node's name: 16 bytes, up to 15 characters in place and longer text
    // in a block of its own; at every length across that step it reads, compares, orders, copies
    // and moves as the std::string it replaced, and stays NUL-terminated.
    void compactTextReadsAsString()
    {
        static_assert(sizeof(CompactText) == 16);
        QVERIFY(CompactText().empty());
        QCOMPARE(std::string(CompactText().c_str()), std::string());
        for (std::size_t length = 0; length <= 40; ++length) {
            std::string text(length, 'a');
            for (std::size_t i = 0; i < length; ++i)
                text[i] = static_cast<char>('a' + i % 26);
            const CompactText compact(text);
            QCOMPARE(compact.size(), length);
            QCOMPARE(std::string(compact.c_str()), text);
            QCOMPARE(compact.str(), text);
            QVERIFY(compact == text && compact == std::string_view(text) && compact == text.c_str());
            QCOMPARE(compact < CompactText(text + "a"), true);
            QCOMPARE(CompactText(text + "a") < compact, false);
            QCOMPARE("k." + compact, "k." + text);
            QCOMPARE(compact + ".x", text + ".x");
            QCOMPARE(compact.find('c') == std::string::npos, text.find('c') == std::string::npos);
            CompactText copy = compact;
            QVERIFY(copy == compact && (length == 0 || copy.data() != compact.data()));
            CompactText moved = std::move(copy);
            QVERIFY(moved == text && copy.empty()); // NOLINT(bugprone-use-after-move): it is emptied
            const CompactText& itself = moved;
            moved = itself; // assigned to itself, it keeps its text
            QVERIFY(moved == text);
            if (length > 0) {
                moved = moved.view().substr(1); // its own text, moved to the front
                QCOMPARE(moved.str(), text.substr(1));
            }
            std::vector<CompactText> grown(3, compact);
            grown.emplace_back("x");
            QVERIFY(grown[2] == text);
        }
        std::map<CompactText, int> ordered {{"b", 1}, {"a", 2}, {"archive/data/10000000000", 3}};
        QCOMPARE(ordered.begin()->first.str(), std::string("a"));
    }

    // A tensor's name: 8 bytes, up to 7 characters in place and longer text in a block of its own
    // of exactly its size; at every length across that step, and with a NUL inside, it reads,
    // compares, orders, copies and moves as the std::string it replaced.
    void slimTextReadsAsString()
    {
        static_assert(sizeof(SlimText) == sizeof(void*));
        QVERIFY(SlimText().empty());
        QCOMPARE(SlimText().view(), std::string_view());
        for (std::size_t length = 0; length <= 40; ++length) {
            std::string text(length, 'a');
            for (std::size_t i = 0; i < length; ++i)
                text[i] = static_cast<char>('a' + i % 26);
            if (length > 2)
                text[1] = '\0'; // pickled names are any bytes
            const SlimText slim(text);
            QCOMPARE(slim.size(), length);
            QCOMPARE(slim.empty(), length == 0);
            QCOMPARE(slim.str(), text);
            QVERIFY(slim == text && slim == std::string_view(text));
            QCOMPARE(slim < SlimText(text + "a"), true);
            QCOMPARE(SlimText(text + "a") < slim, false);
            QCOMPARE("k." + slim, "k." + text);
            QCOMPARE(slim + ".x", text + ".x");
            SlimText copy = slim;
            QVERIFY(copy == slim && (length == 0 || copy.data() != slim.data()));
            SlimText moved = std::move(copy);
            QVERIFY(moved == text && copy.empty()); // NOLINT(bugprone-use-after-move): it is emptied
            const SlimText& itself = moved;
            moved = itself; // assigned to itself, it keeps its text
            QVERIFY(moved == text);
            if (length > 0) {
                moved = moved.view().substr(1); // its own text, moved to the front
                QCOMPARE(moved.str(), text.substr(1));
            }
            moved = "a name longer than seven";
            moved = text; // from a block to text in place, and back
            QVERIFY(moved == text);
            std::vector<SlimText> grown(3, slim);
            grown.emplace_back("x");
            QVERIFY(grown[2] == text);
        }
        std::map<SlimText, int> ordered {{"b", 1}, {"a", 2}, {"model.layers.0.weight", 3}};
        QCOMPARE(ordered.begin()->first.str(), std::string("a"));
    }

    // Both read through one facade (TextViewFacade): its searches, element access, concatenation,
    // printing and hash answer as std::string's do, for text in place and in a block.
    void textClassesSearchAsString()
    {
        const auto searchesAsString = [](const auto& text, const std::string& expected) {
            QCOMPARE(text.length(), expected.size());
            QCOMPARE(std::string(text.begin(), text.end()), expected);
            QCOMPARE(text.front(), expected.front());
            QCOMPARE(text.back(), expected.back());
            QCOMPARE(text[expected.size() / 2], expected[expected.size() / 2]);
            QCOMPARE(std::string(text), expected);
            QCOMPARE(text.starts_with(expected.substr(0, 3)), true);
            QCOMPARE(text.starts_with('x'), expected.starts_with('x'));
            QCOMPARE(text.ends_with("ght"), expected.ends_with("ght"));
            QCOMPARE(text.ends_with('t'), expected.ends_with('t'));
            for (const std::string_view part : {"."sv, "ye"sv, "zz"sv, ""sv}) {
                QCOMPARE(text.find(part), expected.find(part));
                QCOMPARE(text.find(part, 3), expected.find(part, 3));
                QCOMPARE(text.rfind(part), expected.rfind(part));
                QCOMPARE(text.find_first_of(part), expected.find_first_of(part));
                QCOMPARE(text.find_first_not_of(part), expected.find_first_not_of(part));
                QCOMPARE(text.find_last_of(part), expected.find_last_of(part));
                QCOMPARE(text.compare(part) < 0, expected.compare(part) < 0);
                QCOMPARE(text == part, expected == part);
                QVERIFY((text <=> part) == (expected <=> part));
            }
            QCOMPARE(text.find('.', 1), expected.find('.', 1));
            QCOMPARE(text.rfind('.'), expected.rfind('.'));
            QCOMPARE(text.substr(2), expected.substr(2));
            QCOMPARE(text.substr(1, 4), expected.substr(1, 4));
            QCOMPARE('<' + text + '>', '<' + expected + '>');
            QCOMPARE(std::string("a") + text + text, "a" + expected + expected);
            std::string appended = "x";
            appended += text;
            QCOMPARE(appended, "x" + expected);
            std::ostringstream printed;
            printed << text;
            QCOMPARE(printed.str(), expected);
            QCOMPARE(
                std::hash<std::remove_cvref_t<decltype(text)>> {}(text), std::hash<std::string> {}(expected));
        };
        for (const std::string& expected :
            {"a.b"s, "weight"s, "layers.0.weight"s, "model.layers.12.mlp.weight"s}) {
            searchesAsString(CompactText(expected), expected);
            searchesAsString(SlimText(expected), expected);
            if (QTest::currentTestFailed())
                return;
        }
    }

    // StorageRecord's dataOffset and availableBytes, TensorEntry's storageOffset: nine bytes each,
    // every value representable (a hostile file records any), ordered as std::optional orders.
    void packedOptionalReadsAsOptional()
    {
        static_assert(
            sizeof(PackedOptional<std::uint64_t>) == 9 && alignof(PackedOptional<std::uint64_t>) == 1);
        PackedOptional<std::uint64_t> bytes;
        QVERIFY(!bytes && !bytes.has_value() && bytes == std::nullopt);
        QVERIFY(!(bytes >= 0U) && bytes < 0U); // none is less than every value
        QCOMPARE(bytes.value_or(7), std::uint64_t(7));
        QVERIFY_THROWS_EXCEPTION(std::bad_optional_access, (void)bytes.value());
        bytes = std::numeric_limits<std::uint64_t>::max(); // no sentinel: the largest value is a value
        QVERIFY(bytes && *bytes == std::numeric_limits<std::uint64_t>::max());
        bytes = 5;
        QVERIFY(bytes >= 5U && !(bytes >= 6U) && bytes > 4U && bytes == 5U);
        const std::optional<std::uint64_t> asOptional = bytes;
        QCOMPARE(asOptional, std::optional<std::uint64_t>(5));
        bytes = std::optional<std::uint64_t>();
        QVERIFY(!bytes);
        PackedOptional<std::int64_t> offset = std::numeric_limits<std::int64_t>::min();
        QVERIFY(offset && *offset == std::numeric_limits<std::int64_t>::min());
        QVERIFY(PackedOptional<std::int64_t>(0) != PackedOptional<std::int64_t>());
    }

    // A device: one pointer where "none" (no tag recorded) and "" stay apart.
    void optionalInternedStringReadsAsOptional()
    {
        static_assert(sizeof(OptionalInternedString) == sizeof(void*));
        OptionalInternedString device;
        QVERIFY(!device && device == std::nullopt);
        QCOMPARE(device.value_or("cpu").str(), std::string("cpu"));
        device = InternedString("");
        QVERIFY(device.has_value() && device->empty() && device != OptionalInternedString());
        device = "cuda:1";
        QVERIFY(device == "cuda:1" && *device == InternedString("cuda:1"));
        const std::optional<InternedString> asOptional = device;
        QVERIFY(asOptional && *asOptional == "cuda:1");
        device = std::optional<std::string_view>("meta");
        QVERIFY(device == "meta");
        device = std::nullopt;
        QVERIFY(!device.has_value());
        QVERIFY_THROWS_EXCEPTION(std::bad_optional_access, (void)device.value());
    }

    void stateDictGraphGivenBackAsItIsBuilt()
    {
        // Ten nodes a tensor: 20,000 tensors fill four chunks of nodes, and their tuple items and
        // text several chunks each, shared between chunks of nodes at their edges.
        constexpr int kTensors = 20000;
        Checkpoint whole;
        Checkpoint consumed;
        const NodeId root = addStateDict(whole.graph, kTensors);
        QCOMPARE(addStateDict(consumed.graph, kTensors), root);
        QVERIFY(consumed.graph.nodeChunkCount() >= 4);
        CheckpointBuilder wholeBuilder(whole);
        wholeBuilder.addRoot(root, 0, {}, {});
        QVERIFY(!whole.graph.released());

        QVERIFY(CheckpointBuilder::consumableRoot(consumed.graph, root));
        CheckpointBuilder builder(consumed);
        builder.releaseGraphAsConsumed = true;
        builder.addRoot(root, 0, {}, {});
        // Every chunk but the root's (the first) and the newest went back as the walk passed it:
        // the tensors of the later chunks were read after, from items and text of chunks shared
        // with chunks already given back.
        QVERIFY(consumed.graph.released());
        QCOMPARE(consumed.tensors.size(), std::size_t(kTensors));
        QCOMPARE(checkpointToText(consumed), checkpointToText(whole));
        QCOMPARE(consumed.graph.kind(root), NodeKind::Dict);
        const auto newest = static_cast<NodeId>(consumed.graph.size() - 1);
        QCOMPARE(consumed.graph.kind(newest), whole.graph.kind(newest));
        // A later run still adds to the graph (the legacy key list runs after the main pickle).
        const NodeId added = consumed.graph.addText(NodeKind::String, "140234567890123");
        QCOMPARE(consumed.graph.text(added), std::string_view("140234567890123"));

        // A root that is not a state_dict's is walked whole.
        PickleGraph graph;
        const NodeId list = graph.addContainer(NodeKind::List);
        QVERIFY(!CheckpointBuilder::consumableRoot(graph, list));
    }

    // Paid per storage, per tensor and about twice per tensor (tree nodes): a million-tensor file
    // holds a million of each, so a field that grows one costs that many times over. They were
    // 216, 208 and 104 bytes before the record name became a shared stem plus the key, the tar-only
    // fields moved beside the storages, the stride's flag went into its capacity and the summary,
    // empty for nearly every node, became one pointer; then 168, 200 and 80 before the optional
    // offsets and devices lost their padding (PackedOptional, OptionalInternedString) and the key
    // and the node's name became 16-byte CompactText; then 176 for the tensor before its name
    // became 8-byte SlimText (issue 28).
    void perTensorRecordsStayCompact()
    {
        QCOMPARE(sizeof(StorageRecord), std::size_t(128));
        QCOMPARE(sizeof(TensorEntry), std::size_t(152));
        QCOMPARE(sizeof(TreeNode), std::size_t(64));
    }
};

QTEST_GUILESS_MAIN(TestCompactModel)
#include "tst_compactmodel.moc"
