// SPDX-License-Identifier: MIT
// The compact field types of the model (issue 13): interned strings for the names every tensor
// repeats and inline vectors for shapes and index lists. They replace std::string and std::vector
// in TensorEntry, StorageRecord and TreeNode, so they must read, compare, order and copy exactly as
// those did: the model's output is pinned byte for byte by the reader and CLI suites, and these
// pin the types themselves, including their edges (empty, the inline-to-heap step, threads).
#include "core/base/inlinevector.h"
#include "core/base/internedstring.h"

#include <QTest>

#include <algorithm>
#include <array>
#include <map>
#include <thread>

using namespace ckpt;

class TestCompactModel : public QObject {
    Q_OBJECT

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
};

QTEST_GUILESS_MAIN(TestCompactModel)
#include "tst_compactmodel.moc"
