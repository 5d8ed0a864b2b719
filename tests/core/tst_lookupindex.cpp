// SPDX-License-Identifier: MIT
// The reader's look-up tables (issue 13): storages by key and module nodes by (parent, name) in
// FlatIndex, open addressing that keeps no keys of its own, and the zip records a torch file's
// storages use, marked by entry instead of found by sorting their names. A wrong index shows as a
// storage that cannot be found, found twice, or found at another's slot; these tests pin the
// edges where that would happen: keys absent, hashes that collide, growth while colliding, and
// zip names that more than one record carries.
#include "core/base/flatindex.h"
#include "core/format/ziparchive.h"
#include "core/format/zipwriter.h"
#include "core/io/mappedfile.h"
#include "core/model/checkpoint.h"
#include "core/read/checkpointreader.h"
#include "tests/common/testfiles.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <string>
#include <vector>

using namespace ckpt;
using namespace ckpt::testing;

namespace {

Checkpoint withStorages(const std::vector<std::string>& keys)
{
    Checkpoint checkpoint;
    for (const std::string& key : keys) {
        StorageRecord storage;
        storage.key = key;
        checkpoint.storages.push_back(std::move(storage));
        checkpoint.indexStorage(static_cast<std::uint32_t>(checkpoint.storages.size() - 1));
    }
    return checkpoint;
}

std::vector<std::string> findingRecords(const Checkpoint& checkpoint, FindingCode code)
{
    std::vector<std::string> records;
    for (const Finding& finding : checkpoint.findings)
        if (finding.code == code)
            records.push_back(finding.record);
    return records;
}

} // namespace

class TestLookupIndex : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void emptyIndexFindsNothing()
    {
        const FlatIndex index;
        QVERIFY(index.empty());
        QVERIFY(!index.find(0, [](std::uint32_t) { return true; }));
        const Checkpoint checkpoint;
        QVERIFY(!checkpoint.storageIndex(""));
        QVERIFY(!checkpoint.storageIndex("0"));
    }

    // Every index under one hash: the test decides, and the earliest inserted that passes wins,
    // also after the table grew with the run of equal hashes wrapped around its end.
    void collidingHashesKeepInsertionOrder()
    {
        FlatIndex index;
        // 15 is the last slot of the first table (16 slots): the run wraps to slot 0 at once.
        const std::uint64_t hash = 15;
        const std::uint32_t count = 200; // grows 16 -> 512 slots on the way
        for (std::uint32_t i = 0; i < count; ++i)
            index.insert(hash, i * 3);
        // Other hashes between them, so the runs of both interleave.
        for (std::uint32_t i = 0; i < count; ++i)
            index.insert(hash + 1 + i, 100000 + i);
        QCOMPARE(index.size(), std::size_t {2} * count);
        QCOMPARE(index.find(hash, [](std::uint32_t) { return true; }), std::optional<std::uint32_t>(0));
        for (std::uint32_t i = 0; i < count; ++i) {
            QCOMPARE(index.find(hash, [&](std::uint32_t v) { return v >= i * 3; }),
                std::optional<std::uint32_t>(i * 3));
            QCOMPARE(index.find(hash + 1 + i, [](std::uint32_t v) { return v >= 100000; }),
                std::optional<std::uint32_t>(100000 + i));
        }
        QVERIFY(!index.find(hash, [](std::uint32_t v) { return v == 1; }));
        // Same low 32 bits, other high bits: only the low bits place and tag a slot, the test
        // decides.
        QCOMPARE(index.find(hash | (std::uint64_t(7) << 40), [](std::uint32_t v) { return v == 9; }),
            std::optional<std::uint32_t>(9));
        // A hash never inserted finds nothing even where its home slot is taken.
        QVERIFY(!index.find(hash + 5000, [](std::uint32_t) { return true; }));
    }

    // findOrInsert is find() then, when nothing matched, insert(), in one probe: the same answers
    // and the same table as the two calls, colliding hashes and wrapped runs included.
    void findOrInsertIsFindThenInsert()
    {
        FlatIndex single, pair;
        std::uint32_t added = 0;
        for (std::uint32_t i = 0; i < 3000; ++i) {
            const std::uint64_t hash = i % 5 == 0 ? 15 : (i * 2654435761u) % 97; // runs that wrap, repeats
            const std::uint32_t key = i % 1300; // every key is offered two or three times
            const auto same = [&](std::uint32_t v) { return v % 1300 == key; };
            const std::optional<std::uint32_t> found = pair.find(hash, same);
            if (!found)
                pair.insert(hash, i);
            const std::optional<std::uint32_t> answer = single.findOrInsert(hash, i, same);
            QCOMPARE(answer, found);
            added += answer ? 0 : 1;
        }
        QCOMPARE(single.size(), pair.size());
        QCOMPARE(single.size(), std::size_t(added));
        for (std::uint32_t key = 0; key < 1300; ++key)
            for (std::uint64_t hash = 0; hash < 97; ++hash) {
                const auto same = [&](std::uint32_t v) { return v % 1300 == key; };
                QCOMPARE(single.find(hash, same), pair.find(hash, same));
            }
    }

    void reserveKeepsEverything()
    {
        FlatIndex index;
        for (std::uint32_t i = 0; i < 40; ++i)
            index.insert(i % 7, i);
        index.reserve(100000);
        for (std::uint32_t i = 0; i < 40; ++i)
            QCOMPARE(
                index.find(i % 7, [&](std::uint32_t v) { return v == i; }), std::optional<std::uint32_t>(i));
        QCOMPARE(index.find(3, [](std::uint32_t) { return true; }), std::optional<std::uint32_t>(3));
    }

    void storagesByKey()
    {
        std::vector<std::string> keys;
        keys.reserve(50002);
        for (int i = 0; i < 50000; ++i)
            keys.push_back(std::to_string(i));
        keys.push_back("constants/0");
        keys.push_back(""); // an empty key is a key like any other
        const Checkpoint checkpoint = withStorages(keys);
        for (std::size_t i = 0; i < keys.size(); ++i)
            QCOMPARE(checkpoint.storageIndex(keys[i]), std::optional<std::uint32_t>(std::uint32_t(i)));
        // Absent: a longer key, a shorter one, one differing only past a shared prefix, other case.
        for (const char* absent :
            {"50000", "constants/", "constants/1", "constants/00", " 1", "1 ", "data/1"})
            QVERIFY2(!checkpoint.storageIndex(absent), absent);
        QVERIFY(!checkpoint.storageIndex(std::string_view("12\0", 3)));
    }

    // torch keeps the first storage of a key; so does the index, as the map's emplace did.
    void repeatedKeyKeepsTheFirst()
    {
        Checkpoint checkpoint = withStorages({"a", "b"});
        StorageRecord again;
        again.key = "a";
        checkpoint.storages.push_back(again);
        QVERIFY(!checkpoint.indexStorage(2));
        QCOMPARE(checkpoint.storageIndex("a"), std::optional<std::uint32_t>(0));
        QCOMPARE(checkpoint.storageIndex("b"), std::optional<std::uint32_t>(1));
        // The key is read from the record itself: a record whose key changed is not found by its
        // old key (so writers index a storage only once its key is final).
        checkpoint.storages[1].key = "c";
        QVERIFY(!checkpoint.storageIndex("b"));
        QVERIFY(!checkpoint.storageIndex("c"));
    }

    // torch.save's keys "0", "1", "2"... in order cost no slot; the first key that breaks the
    // sequence and every later one are hashed, and look-ups of both parts agree with a plain
    // first-match scan, including keys that only look like numbers.
    void denseKeysCostNothingAndAgreeWithAScan()
    {
        std::vector<std::string> dense;
        for (int i = 0; i < 100000; ++i)
            dense.push_back(std::to_string(i));
        const Checkpoint torchSave = withStorages(dense);
        QCOMPARE(torchSave.storageKeyIndex.size(), std::size_t {100000});
        QCOMPARE(torchSave.storageKeyIndex.hashedCount(), std::size_t {0});
        QCOMPARE(torchSave.storageIndex("99999"), std::optional<std::uint32_t>(99999));
        for (const char* absent : {"100000", "007", "07", "+1", "-1", " 1", "1 ", "", "4294967295",
                 "4294967296", "99999999999", "1e3", "0x1"})
            QVERIFY2(!torchSave.storageIndex(absent), absent);

        // Random files: runs of in-order numbers, then repeats, numbers out of order, numbers
        // spelled other ways, and names; each key's answer must be the first storage that has it.
        std::uint64_t state = 0x9E3779B97F4A7C15ull;
        const auto next = [&state](std::uint64_t below) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            return (state >> 33) % below;
        };
        for (int round = 0; round < 200; ++round) {
            std::vector<std::string> keys;
            const std::size_t count = 1 + next(300);
            const std::size_t denseRun = next(count + 1);
            for (std::size_t i = 0; i < count; ++i) {
                if (i < denseRun) {
                    keys.push_back(std::to_string(i));
                    continue;
                }
                switch (next(6)) {
                case 0:
                    keys.push_back(std::to_string(i));
                    break; // in order again, after the break
                case 1:
                    keys.push_back(std::to_string(next(count + 5)));
                    break; // any number
                case 2:
                    keys.push_back("0" + std::to_string(next(20)));
                    break; // a leading zero
                case 3:
                    keys.push_back(keys.empty() ? std::string("k0") : keys[next(keys.size())]);
                    break; // a repeat
                case 4:
                    keys.push_back("k" + std::to_string(next(50)));
                    break;
                default:
                    keys.push_back(std::to_string(4294967290ull + next(10)));
                    break;
                }
            }
            Checkpoint checkpoint;
            for (std::size_t i = 0; i < keys.size(); ++i) {
                const bool earlier
                    = std::find(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(i), keys[i])
                    != keys.begin() + static_cast<std::ptrdiff_t>(i);
                StorageRecord storage;
                storage.key = keys[i];
                checkpoint.storages.push_back(std::move(storage));
                QCOMPARE(checkpoint.indexStorage(static_cast<std::uint32_t>(i)), !earlier);
                QVERIFY(!checkpoint.indexStorage(static_cast<std::uint32_t>(i))); // again: found, not added
            }
            for (std::size_t i = 0; i < keys.size(); ++i) {
                const auto first = std::uint32_t(std::find(keys.begin(), keys.end(), keys[i]) - keys.begin());
                QCOMPARE(checkpoint.storageIndex(keys[i]), std::optional<std::uint32_t>(first));
            }
            for (std::size_t probe = 0; probe < 400; ++probe) {
                const std::string key = std::to_string(probe);
                const auto at = std::find(keys.begin(), keys.end(), key);
                QCOMPARE(checkpoint.storageIndex(key),
                    at == keys.end() ? std::nullopt
                                     : std::optional<std::uint32_t>(std::uint32_t(at - keys.begin())));
            }
            QVERIFY(
                checkpoint.storageKeyIndex.hashedCount() <= keys.size() - std::min(denseRun, keys.size()));
        }
    }

    // The reader's index matches its storages on a real torch file: every key at its own index.
    void readerIndexesEveryStorage()
    {
        for (const char* name : {"torch-2/devices_cuda0.pt", "torch-2/many_tensors.pt",
                 "torch-1.13/legacy_state_dict.pt", "torch-1.13/torchscript_quantized_static.pt"}) {
            const Checkpoint checkpoint = readCheckpoint(fixturePath(name).toStdString());
            QVERIFY2(!checkpoint.storages.empty(), name);
            for (std::size_t i = 0; i < checkpoint.storages.size(); ++i)
                QCOMPARE(checkpoint.storageIndex(checkpoint.storages[i].key),
                    std::optional<std::uint32_t>(std::uint32_t(i)));
            QVERIFY(!checkpoint.storageIndex("no such key"));
        }
    }

    // Module nodes: found again by (parent, name), not by name alone, and a node the builder pruned
    // (its slot reused by another node) is made again rather than returned.
    void modulePathsByParentAndName()
    {
        Checkpoint checkpoint;
        checkpoint.ensureRoot();
        std::string leaf;
        const std::uint32_t q = checkpoint.modulePathFor(0, "layers.0.attn.q.weight", leaf);
        QCOMPARE(leaf, std::string("weight"));
        QCOMPARE(checkpoint.treePath(q), std::string("layers.0.attn.q"));
        QCOMPARE(checkpoint.modulePathFor(0, "layers.0.attn.q.bias", leaf), q);
        QCOMPARE(leaf, std::string("bias"));
        const std::uint32_t otherQ = checkpoint.modulePathFor(0, "layers.1.attn.q.bias", leaf);
        QVERIFY(otherQ != q);
        QCOMPARE(checkpoint.treePath(otherQ), std::string("layers.1.attn.q"));
        // Below another parent, the same name is another node.
        const std::uint32_t below = checkpoint.modulePathFor(q, "layers.x", leaf);
        QCOMPARE(checkpoint.treePath(below), std::string("layers.0.attn.q.layers"));
        QCOMPARE(checkpoint.tree.size(), std::size_t {9});

        // Prune everything after layers.0 and reuse the slots for other nodes.
        const std::uint32_t layers0 = checkpoint.tree[checkpoint.tree[q].parent].parent;
        checkpoint.tree.resize(layers0 + 1);
        checkpoint.tree[layers0].children.clear();
        checkpoint.addTreeNode(layers0, TreeNodeKind::Value, "attn"); // not a Module: not a prefix
        const std::uint32_t again = checkpoint.modulePathFor(0, "layers.0.attn.q.weight", leaf);
        QCOMPARE(checkpoint.treePath(again), std::string("layers.0.attn.q"));
        QCOMPARE(checkpoint.tree[checkpoint.tree[again].parent].kind, TreeNodeKind::Module);
        QCOMPARE(checkpoint.modulePathFor(0, "layers.0.attn.q.bias", leaf), again);
        QCOMPARE(checkpoint.modulePathFor(0, "layers.1.attn.q.bias", leaf) != again, true);
    }

    // A torch file re-zipped with a storage record repeated and two records no storage uses (a
    // malformed input on purpose, written by this project's zip writer from the records of a file
    // torch wrote): the repeat of a used name is not reported unused, both unused records are.
    void repeatedRecordNamesCountAsUsed()
    {
        const QString source = fixturePath("torch-2/devices_cuda0.pt");
        auto input = MappedFile::open(source.toStdString());
        QVERIFY(input);
        const ZipArchive original = ZipArchive::open(*input);
        QVERIFY(original.hasEntries());
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath(QStringLiteral("repeated.pt"));
        {
            QFile out(path);
            QVERIFY(out.open(QIODevice::WriteOnly));
            TorchZipWriter writer(out.handle());
            const auto add = [&](std::string_view name, const ZipEntry& entry) {
                const std::optional<ByteView> payload = original.storedPayload(entry);
                QVERIFY(payload);
                QVERIFY(!writer.addRecord(name, *payload));
            };
            for (const ZipEntry& entry : original.entries()) {
                add(entry.name(), entry);
                if (entry.name() == "devices_cuda0/data/3") {
                    add("devices_cuda0/data/3", entry);
                    add("devices_cuda0/data/99", entry);
                }
            }
            add("devices_cuda0/data/99", original.entries().front());
            QVERIFY(!writer.finish());
            out.close();
        }
        const Checkpoint checkpoint = readCheckpoint(path.toStdString());
        QCOMPARE(checkpoint.storages.size(), std::size_t {11});
        std::vector<std::string> duplicates = findingRecords(checkpoint, FindingCode::DuplicateRecordName);
        std::sort(duplicates.begin(), duplicates.end());
        QCOMPARE(duplicates, (std::vector<std::string> {"devices_cuda0/data/3", "devices_cuda0/data/99"}));
        QCOMPARE(findingRecords(checkpoint, FindingCode::RecordUnreferenced),
            (std::vector<std::string> {"devices_cuda0/data/99", "devices_cuda0/data/99"}));
        const std::optional<std::uint32_t> three = checkpoint.storageIndex("3");
        QVERIFY(three);
        QCOMPARE(checkpoint.storages[*three].record(), std::string("devices_cuda0/data/3"));
    }
};

QTEST_GUILESS_MAIN(TestLookupIndex)
#include "tst_lookupindex.moc"
