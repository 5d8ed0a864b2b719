// SPDX-License-Identifier: MIT
// Checkpoints of several files (tests/fixtures/sharded/, written by transformers, huggingface_hub,
// torch.save and torch.distributed.checkpoint; expectations from torch.load, safe_open, DCP's
// read_metadata and from_pretrained): `info`, `check`, `remap` and `plan --save` on folders,
// indexes and single shards, judged by the real readers.
#include "fixturecomparison.h"
#include "tests/common/foldercopy.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <map>
#include <set>

using namespace ckpt;

namespace {

QString sharded(const QString& name)
{
    return fixturesDir() + QStringLiteral("/sharded/") + name;
}

JsonValue readJsonFile(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    return parse(file.readAll());
}

struct PythonResult {
    int exitCode = -1;
    QByteArray out;
    QByteArray err;
};

PythonResult runModernPython(const QStringList& arguments)
{
    QProcess python;
    python.start(QStringLiteral(CKPT_MODERN_PYTHON), arguments);
    python.waitForFinished(600'000);
    return {python.exitStatus() == QProcess::NormalExit ? python.exitCode() : -1,
        python.readAllStandardOutput(), python.readAllStandardError()};
}

} // namespace

class TestShardedCommands : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // Every tensor torch loads from every intact shard, with its dtype, shape, shard and recorded
    // device; tensors of a broken shard are the only ones allowed to differ.
    void infoListsWhatTorchLoads_data()
    {
        QTest::addColumn<QString>("fixture");
        QTest::addColumn<int>("exitCode");
        for (const char* name : {"bin_cpu", "bin_cuda", "safetensors"})
            QTest::newRow(name) << QString::fromLatin1(name) << 0;
        for (const char* name : {"broken_missing_shard", "broken_lfs_pointer", "broken_truncated"})
            QTest::newRow(name) << QString::fromLatin1(name) << 2;
        QTest::newRow("broken_index_ghost")
            << QStringLiteral("broken_index_ghost") << 0; // info reads; check judges
    }
    void infoListsWhatTorchLoads()
    {
        QFETCH(QString, fixture);
        QFETCH(int, exitCode);
        const JsonValue truth = readJsonFile(sharded(fixture + QStringLiteral(".expected.json")));
        QVERIFY(truth.isObject());
        const CommandResult result
            = runInspect({QStringLiteral("info"), QStringLiteral("--json"), sharded(fixture)});
        QVERIFY2(result.exitCode == exitCode, qPrintable(describe(result)));
        const JsonValue ours = parse(result.out);
        QCOMPARE(ours.member("layout").toString(), truth.member("layout").toString());
        const std::string broken = truth.member("broken_shard").toString();
        std::map<std::string, const JsonValue*> ourTensors;
        for (const JsonValue& tensor : ours.member("tensors").items()) {
            QVERIFY2(!ourTensors.count(tensor.member("name").toString()), "a tensor listed twice");
            ourTensors[tensor.member("name").toString()] = &tensor;
        }
        std::size_t matched = 0;
        for (const JsonValue& want : truth.member("tensors").items()) {
            if (want.find("load_error"))
                continue; // torch could not load that shard at all
            const std::string name = want.member("name").toString();
            const auto it = ourTensors.find(name);
            QVERIFY2(it != ourTensors.end(), qPrintable(u"missing "_qs + QString::fromStdString(name)));
            for (const char* field : {"dtype", "shape", "shard", "device"})
                QVERIFY2(it->second->member(field) == want.member(field),
                    qPrintable(QString::fromStdString(name) + u": "_qs + QString::fromLatin1(field) + u" "_qs
                        + show(it->second->member(field)) + u", torch says "_qs + show(want.member(field))));
            ourTensors.erase(it);
            ++matched;
        }
        QVERIFY(matched >= 26);
        // What is left over can only come from the broken shard (salvaged from a cut-off file).
        for (const auto& [name, tensor] : ourTensors)
            QVERIFY2(tensor->member("shard").toString() == broken,
                qPrintable(u"not loaded by torch: "_qs + QString::fromStdString(name)));
        // transformers loads the same weights, plus the tied lm_head that no shard holds.
        if (truth.find("transformers")) {
            std::set<std::string> loaded;
            for (const JsonValue& tensor : truth.member("transformers").items())
                loaded.insert(tensor.member("name").toString());
            for (const JsonValue& tensor : ours.member("tensors").items())
                QVERIFY(loaded.erase(tensor.member("name").toString()));
            QCOMPARE(loaded, (std::set<std::string> {"lm_head.weight"}));
        }
    }

    // An index, or any one shard, opens the whole set.
    void indexAndShardOpenTheWholeSet()
    {
        const CommandResult folder = runInspect(
            {QStringLiteral("info"), QStringLiteral("--json"), sharded(QStringLiteral("bin_cuda"))});
        const CommandResult index = runInspect({QStringLiteral("info"), QStringLiteral("--json"),
            sharded(QStringLiteral("bin_cuda/pytorch_model.bin.index.json"))});
        const CommandResult shard = runInspect({QStringLiteral("info"), QStringLiteral("--json"),
            sharded(QStringLiteral("bin_cuda/pytorch_model-00002-of-00003.bin"))});
        QCOMPARE(folder.exitCode, 0);
        QCOMPARE(index.exitCode, 0);
        QCOMPARE(shard.exitCode, 0);
        QCOMPARE(parse(index.out).member("tensors"), parse(folder.out).member("tensors"));
        QCOMPARE(parse(shard.out).member("tensors"), parse(folder.out).member("tensors"));
        QCOMPARE(parse(folder.out).member("tensors").size(), std::size_t(38));
        // Totals per recorded device and per shard.
        QVERIFY(parse(folder.out).member("bytes_by_device").find("cuda:1"));
        QCOMPARE(parse(folder.out).member("shards").size(), std::size_t(3));
        const CommandResult text = runInspect({QStringLiteral("info"), sharded(QStringLiteral("bin_cuda"))});
        QVERIFY(text.out.contains("[pytorch_model-00003-of-00003.bin]"));
        QVERIFY(text.out.contains("storages: cuda:0"));
    }

    // DCP: what DCP's own read_metadata says, entry by entry and chunk by chunk.
    void dcpListsWhatItsMetadataSays()
    {
        const JsonValue truth = readJsonFile(sharded(QStringLiteral("dcp.expected.json")));
        const CommandResult result
            = runInspect({QStringLiteral("info"), QStringLiteral("--json"), sharded(QStringLiteral("dcp"))});
        QVERIFY2(result.exitCode == 0, qPrintable(describe(result)));
        const JsonValue ours = parse(result.out);
        QCOMPARE(ours.member("format").toString(), std::string("dcp"));
        QCOMPARE(ours.member("dcp").member("version"), truth.member("dcp").member("version"));
        QCOMPARE(ours.member("dcp").member("records_device"), JsonValue(false));
        const auto& want = truth.member("dcp").member("entries").items();
        const auto& got = ours.member("dcp").member("entries").items();
        QCOMPARE(got.size(), want.size());
        std::size_t bytesEntries = 0;
        for (std::size_t i = 0; i < want.size(); ++i) {
            QCOMPARE(got[i].member("fqn"), want[i].member("fqn"));
            QCOMPARE(got[i].member("kind"), want[i].member("kind"));
            if (want[i].member("kind").toString() == "bytes") {
                ++bytesEntries;
                QCOMPARE(got[i].member("chunks").at(0).member("file"), want[i].member("file"));
                QCOMPARE(got[i].member("chunks").at(0).member("file_offset"), want[i].member("file_offset"));
                QCOMPARE(got[i].member("chunks").at(0).member("length"), want[i].member("length"));
                continue;
            }
            QCOMPARE(got[i].member("dtype"), want[i].member("dtype"));
            QCOMPARE(got[i].member("size"), want[i].member("size"));
            const auto& gotChunks = got[i].member("chunks").items();
            const auto& wantChunks = want[i].member("chunks").items();
            QCOMPARE(gotChunks.size(), wantChunks.size());
            for (std::size_t c = 0; c < wantChunks.size(); ++c) {
                for (const char* field : {"offsets", "sizes", "file", "file_offset", "length"})
                    QVERIFY2(gotChunks[c].member(field) == wantChunks[c].member(field),
                        qPrintable(QString::fromStdString(want[i].member("fqn").toString()) + u": "_qs
                            + QString::fromLatin1(field)));
                if (!wantChunks[c].member("transforms").isNull())
                    QCOMPARE(gotChunks[c].member("transforms"), wantChunks[c].member("transforms"));
            }
        }
        QCOMPARE(bytesEntries, std::size_t(2));
        QCOMPARE(ours.member("tensors").size(), want.size() - bytesEntries);
        for (const JsonValue& tensor : ours.member("tensors").items())
            QVERIFY(tensor.member("device").isNull()); // DCP records no device
        bool said = false;
        for (const JsonValue& finding : ours.member("findings").items())
            said = said || finding.member("code").toString() == "dcp-records-no-device";
        QVERIFY(said);
        const CommandResult text = runInspect({QStringLiteral("info"), sharded(QStringLiteral("dcp"))});
        QVERIFY(text.out.contains("<torch.distributed.checkpoint.metadata.BytesStorageMetadata>"));
        // The .metadata file itself and a .distcp file open the same folder.
        QCOMPARE(parse(runInspect({QStringLiteral("info"), QStringLiteral("--json"),
                                      sharded(QStringLiteral("dcp/.metadata"))})
                           .out)
                     .member("tensors"),
            ours.member("tensors"));
    }

    // Every DCP (issue 26, tests/fixtures/dcp, written by torch 2.14's DCP; truth from its
    // read_metadata and _load_state_dict_from_keys): storage metadata of newer torch, one file per
    // item, and a Megatron-core-shaped folder whose .metadata names a subclass of Metadata.
    void everyDcpListsWhatDcpReads_data()
    {
        QTest::addColumn<QString>("fixture");
        for (const char* name : {"plain", "multi", "standin", "megatron", "zstd"})
            QTest::newRow(name) << QString::fromLatin1(name);
    }

    void everyDcpListsWhatDcpReads()
    {
        QFETCH(QString, fixture);
        const QString folder = fixturesDir() + QStringLiteral("/dcp/") + fixture;
        const JsonValue truth = readJsonFile(folder + QStringLiteral(".expected.json"));
        QVERIFY(truth.isObject());
        const CommandResult result = runInspect({QStringLiteral("info"), QStringLiteral("--json"), folder});
        const JsonValue ours = parse(result.out);
        QVERIFY2(ours.isObject(), qPrintable(describe(result)));
        QCOMPARE(ours.member("format").toString(), std::string("dcp"));
        const JsonValue& dcp = ours.member("dcp");
        QCOMPARE(dcp.member("version"), truth.member("dcp").member("version"));
        QCOMPARE(dcp.member("metadata_class"), truth.member("dcp").member("metadata_class"));
        QCOMPARE(dcp.member("extra_fields"), truth.member("dcp").member("extra_fields"));
        const auto& want = truth.member("dcp").member("entries").items();
        const auto& got = dcp.member("entries").items();
        QCOMPARE(got.size(), want.size());
        for (std::size_t i = 0; i < want.size(); ++i) {
            QCOMPARE(got[i].member("fqn"), want[i].member("fqn"));
            QCOMPARE(got[i].member("kind"), want[i].member("kind"));
            if (want[i].member("kind").toString() == "bytes") {
                QCOMPARE(got[i].member("chunks").at(0).member("file"), want[i].member("file"));
                QCOMPARE(got[i].member("chunks").at(0).member("file_offset"), want[i].member("file_offset"));
                QCOMPARE(got[i].member("chunks").at(0).member("length"), want[i].member("length"));
                continue;
            }
            QCOMPARE(got[i].member("dtype"), want[i].member("dtype"));
            QCOMPARE(got[i].member("size"), want[i].member("size"));
            const auto& gotChunks = got[i].member("chunks").items();
            const auto& wantChunks = want[i].member("chunks").items();
            QCOMPARE(gotChunks.size(), wantChunks.size());
            for (std::size_t c = 0; c < wantChunks.size(); ++c) {
                for (const char* field : {"offsets", "sizes", "file", "file_offset", "length"})
                    QVERIFY2(gotChunks[c].member(field) == wantChunks[c].member(field),
                        qPrintable(QString::fromStdString(want[i].member("fqn").toString()) + u": "_qs
                            + QString::fromLatin1(field)));
                if (!wantChunks[c].member("transforms").isNull())
                    QCOMPARE(gotChunks[c].member("transforms"), wantChunks[c].member("transforms"));
            }
        }
        // Each data file as the ranges storage_data places in it, by offset; every tensor chunk's
        // archive holds one tensor of its entry's dtype.
        const JsonValue& wantFiles = truth.member("dcp").member("files");
        QCOMPARE(dcp.member("files").size(), wantFiles.members().size());
        for (const JsonValue& file : dcp.member("files").items()) {
            const JsonValue& items = wantFiles.member(file.member("name").toString());
            QCOMPARE(file.member("items").size(), items.size());
            QCOMPARE(file.member("unclaimed_bytes").toUInt64(), std::optional<std::uint64_t>(0));
            for (std::size_t k = 0; k < items.size(); ++k) {
                const JsonValue& item = file.member("items").at(k);
                QCOMPARE(item.member("fqn"), items.at(k).member("fqn"));
                QCOMPARE(item.member("offset"), items.at(k).member("offset"));
                QCOMPARE(item.member("length"), items.at(k).member("length"));
                // Through torch's ZStandard writer extension: undone, then read as the archive it is.
                QCOMPARE(item.member("content").toString(),
                    std::string(fixture == u"zstd"_qs ? "torch.save archive through stream.zstd/1"
                                                      : "torch.save archive"));
                QVERIFY(item.member("problem").isNull());
                if (item.member("kind").toString() == "tensor-chunk")
                    QCOMPARE(item.member("archive_dtype"),
                        truth.member("loaded").member(item.member("fqn").toString()).member("dtype"));
            }
        }
        // The tensors DCP's loader gives back, by name, dtype and global shape; no device recorded.
        std::map<std::string, const JsonValue*> tensors;
        for (const JsonValue& tensor : ours.member("tensors").items())
            tensors[tensor.member("name").toString()] = &tensor;
        std::size_t loadedTensors = 0;
        for (const JsonMember& loaded : truth.member("loaded").members()) {
            if (loaded.value.member("dtype").isNull())
                continue;
            ++loadedTensors;
            QVERIFY2(tensors.count(loaded.key), loaded.key.c_str());
            QCOMPARE(tensors[loaded.key]->member("dtype"), loaded.value.member("dtype"));
            QCOMPARE(tensors[loaded.key]->member("shape"), loaded.value.member("shape"));
            QVERIFY(tensors[loaded.key]->member("device").isNull());
        }
        QVERIFY(loadedTensors > 0);
        if (fixture == QStringLiteral("standin")) {
            // Every class replaced from another module: read by shape; rated, never imported.
            QCOMPARE(ours.member("safety").member("rating").toString(), std::string("dangerous"));
            QVERIFY(result.out.contains("otherframework.dcpmeta.TensorInfo"));
            QCOMPARE(tensors.size(), loadedTensors);
            return;
        }
        if (fixture != QStringLiteral("megatron")) {
            QCOMPARE(result.exitCode, 0); // torch's own classes and an io.BytesIO: all vetted
            QCOMPARE(tensors.size(), loadedTensors);
            return;
        }
        // Megatron: common.pt and metadata.json belong to the document; the subclass is never
        // imported, and the safety verdict names it.
        QCOMPARE(tensors.size(), loadedTensors); // common.pt holds no tensor
        QVERIFY(dcp.member("companions").member("common.pt").isString());
        QVERIFY(dcp.member("companions").member("metadata.json").toString().find("torch_dist")
            != std::string::npos);
        QVERIFY(!dcp.member("framework").isNull());
        QCOMPARE(ours.member("safety").member("rating").toString(), std::string("dangerous"));
        QVERIFY(result.out.contains("megatron.core.dist_checkpointing.strategies.torch.MCoreMetadata"));
        QVERIFY(result.out.contains("common.pt: common/data.pkl"));
        const CommandResult text = runInspect({QStringLiteral("info"), folder});
        QVERIFY2(text.out.contains("common.pt  (torch.save file)"), text.out.left(4000).constData());
        QVERIFY(text.out.contains("iteration = 10"));
        QVERIFY(text.out.contains("shard_0.0_1.1"));
    }

    // Chunks written through a writer extension torch's registry does not know (DCP's load fails
    // with "Unknown extension"): the metadata's tensors are listed, the extension is named, and the
    // pickled values it hides are not called inert.
    void unknownDcpWriterExtensionIsNamed()
    {
        const QString folder = fixturesDir() + QStringLiteral("/dcp/unknown_transform");
        const JsonValue truth = readJsonFile(folder + QStringLiteral(".expected.json"));
        const CommandResult result = runInspect({QStringLiteral("info"), QStringLiteral("--json"), folder});
        const JsonValue ours = parse(result.out);
        QVERIFY2(ours.isObject(), qPrintable(describe(result)));
        std::map<std::string, const JsonValue*> tensors;
        for (const JsonValue& tensor : ours.member("tensors").items())
            tensors[tensor.member("name").toString()] = &tensor;
        std::size_t listed = 0;
        for (const JsonValue& entry : truth.member("dcp").member("entries").items()) {
            if (entry.member("kind").toString() != "tensor")
                continue;
            ++listed;
            const std::string fqn = entry.member("fqn").toString();
            QVERIFY2(tensors.count(fqn), fqn.c_str());
            QCOMPARE(tensors[fqn]->member("dtype"), entry.member("dtype"));
            QCOMPARE(tensors[fqn]->member("shape"), entry.member("size"));
            QCOMPARE(entry.member("chunks").at(0).member("transforms").at(0).toString(),
                std::string("stream.xor@example.org/1"));
        }
        QCOMPARE(tensors.size(), listed);
        bool named = false;
        for (const JsonValue& finding : ours.member("findings").items())
            named = named
                || (finding.member("code").toString() == "dcp-transform-unknown"
                    && finding.member("message").toString().find("stream.xor@example.org/1")
                        != std::string::npos);
        QVERIFY2(named, result.out.left(3000).constData());
        QCOMPARE(ours.member("safety").member("rating").toString(), std::string("dangerous"));
    }

    // A folder saved rank by rank without coordination (use_collectives=False: __0.metadata and
    // __1.metadata, no .metadata): each rank's keys as DCP's load on that rank gives them back,
    // named rankR:<key>.
    void perRankDcpListsEachRanksState()
    {
        const QString folder = fixturesDir() + QStringLiteral("/dcp/per_rank");
        const JsonValue truth = readJsonFile(folder + QStringLiteral(".expected.json"));
        const CommandResult result = runInspect({QStringLiteral("info"), QStringLiteral("--json"), folder});
        const JsonValue ours = parse(result.out);
        QVERIFY2(ours.isObject(), qPrintable(describe(result)));
        QCOMPARE(ours.member("format").toString(), std::string("dcp"));
        QCOMPARE(ours.member("dcp").member("metadata_files").size(), truth.member("ranks").members().size());
        std::map<std::string, const JsonValue*> tensors;
        for (const JsonValue& tensor : ours.member("tensors").items())
            tensors[tensor.member("name").toString()] = &tensor;
        std::size_t loadedTensors = 0;
        std::size_t entries = 0;
        for (const JsonMember& rank : truth.member("ranks").members()) {
            entries += rank.value.member("dcp").member("entries").size();
            for (const JsonMember& loaded : rank.value.member("loaded").members()) {
                if (loaded.value.member("dtype").isNull())
                    continue;
                ++loadedTensors;
                const std::string name = "rank" + rank.key + ":" + loaded.key;
                QVERIFY2(tensors.count(name), name.c_str());
                QCOMPARE(tensors[name]->member("dtype"), loaded.value.member("dtype"));
                QCOMPARE(tensors[name]->member("shape"), loaded.value.member("shape"));
            }
        }
        QCOMPARE(tensors.size(), loadedTensors);
        QCOMPARE(ours.member("dcp").member("entries").size(), entries);
        QCOMPARE(result.exitCode, 0); // DCP's own classes only, in both ranks' metadata
        bool said = false;
        for (const JsonValue& finding : ours.member("findings").items())
            said = said || finding.member("code").toString() == "dcp-per-rank-metadata";
        QVERIFY(said);
    }

    // A .metadata cut short: named as unreadable, with where it stops; nothing else is claimed.
    void truncatedDcpMetadataSaysWhere()
    {
        const QString folder = fixturesDir() + QStringLiteral("/dcp/truncated_metadata");
        const CommandResult result = runInspect({QStringLiteral("info"), QStringLiteral("--json"), folder});
        const JsonValue ours = parse(result.out);
        QVERIFY2(ours.isObject(), qPrintable(describe(result)));
        QCOMPARE(ours.member("tensors").size(), std::size_t(0));
        bool said = false;
        for (const JsonValue& finding : ours.member("findings").items())
            said = said
                || (finding.member("code").toString() == "dcp-metadata-unreadable"
                    && finding.member("message").toString().find("could not be read to its end")
                        != std::string::npos);
        QVERIFY2(said, result.out.left(3000).constData());
    }

    void checkNamesTheBrokenShard_data()
    {
        QTest::addColumn<QString>("fixture");
        QTest::addColumn<int>("exitCode");
        for (const char* name : {"broken_missing_shard", "broken_lfs_pointer", "broken_truncated",
                 "broken_index_ghost", "broken_index_elsewhere"})
            QTest::newRow(name) << QString::fromLatin1(name) << 2;
        // Its .metadata is intact and holds only vetted DCP classes: the truncated chunk file is
        // the error.
        QTest::newRow("broken_dcp_truncated") << QStringLiteral("broken_dcp_truncated") << 2;
        // Warnings: the set still loads, but something is off.
        for (const char* name :
            {"broken_index_unlisted", "broken_total_size", "broken_duplicate", "broken_dtype"})
            QTest::newRow(name) << QString::fromLatin1(name) << 1;
    }
    void checkNamesTheBrokenShard()
    {
        QFETCH(QString, fixture);
        QFETCH(int, exitCode);
        const JsonValue truth = readJsonFile(sharded(fixture + QStringLiteral(".expected.json")));
        const CommandResult result
            = runInspect({QStringLiteral("check"), QStringLiteral("--json"), sharded(fixture)});
        QVERIFY2(result.exitCode == exitCode, qPrintable(describe(result)));
        const JsonValue report = parse(result.out);
        const JsonValue* finding = nullptr;
        for (const JsonValue& candidate : report.member("findings").items())
            if (candidate.member("code") == truth.member("finding"))
                finding = &candidate;
        QVERIFY2(finding,
            qPrintable(u"no "_qs + QString::fromStdString(truth.member("finding").toString()) + u" in "_qs
                + describe(result)));
        QCOMPARE(finding->member("severity").toString(), std::string(exitCode == 1 ? "warning" : "error"));
        QVERIFY2(finding->member("message").toString().find(truth.member("broken_shard").toString())
                    != std::string::npos
                || finding->member("record") == truth.member("broken_shard"),
            qPrintable(show(*finding)));
        for (const JsonValue& lost : truth.member("tensors_lost").items()) {
            QVERIFY2(finding->member("message").toString().find(lost.toString()) != std::string::npos,
                qPrintable(show(*finding)));
            break; // the message names the first few; the first sorted one must be among them
        }
        QVERIFY(!finding->member("fix").toString().empty());
        // The intact shards are still shown.
        const JsonValue info
            = parse(runInspect({QStringLiteral("info"), QStringLiteral("--json"), sharded(fixture)}).out);
        QVERIFY(info.member("tensors").size() >= 26);
    }

    // Hostile inputs: an index that names a file outside its folder is not followed; a .metadata
    // whose pickle would run os.system is read symbolically and refused, and nothing runs.
    void hostileIndexAndMetadata()
    {
        QTemporaryDir work;
        const QString folder = work.filePath(QStringLiteral("model"));
        QVERIFY(QDir().mkpath(folder));
        for (const QString& name : QDir(sharded(QStringLiteral("bin_cpu"))).entryList(QDir::Files))
            QVERIFY(QFile::copy(sharded(QStringLiteral("bin_cpu/")) + name, folder + u'/' + name));
        QVERIFY(QFile::copy(sharded(QStringLiteral("bin_cpu/pytorch_model-00002-of-00003.bin")),
            work.filePath(QStringLiteral("outside.bin"))));
        QFile index(folder + QStringLiteral("/pytorch_model.bin.index.json"));
        QVERIFY(index.open(QIODevice::ReadOnly));
        QByteArray text = index.readAll();
        index.close();
        text.replace("\"pytorch_model-00002-of-00003.bin\"", "\"../outside.bin\"");
        QVERIFY(index.open(QIODevice::WriteOnly | QIODevice::Truncate));
        index.write(text);
        index.close();
        const CommandResult result = runInspect({QStringLiteral("check"), QStringLiteral("--json"), folder});
        QCOMPARE(result.exitCode, 2);
        QVERIFY2(result.out.contains("outside its folder"), result.out.left(3000).constData());
        const JsonValue info
            = parse(runInspect({QStringLiteral("info"), QStringLiteral("--json"), folder}).out);
        for (const JsonValue& tensor : info.member("tensors").items())
            QVERIFY(tensor.member("shard").toString() != "../outside.bin");
        QCOMPARE(info.member("tensors").size(), std::size_t(26)); // the two intact shards

        if (QStringLiteral(CKPT_LEGACY_PYTHON).isEmpty()
            || !QFileInfo::exists(QStringLiteral(CKPT_LEGACY_PYTHON)))
            QSKIP("no python to write the hostile pickle with");
        const QString dcp = work.filePath(QStringLiteral("dcp"));
        QVERIFY(QDir().mkpath(dcp));
        const QString marker = work.filePath(QStringLiteral("marker"));
        QProcess python; // writes the payload only; nothing here ever unpickles it
        python.start(QStringLiteral(CKPT_LEGACY_PYTHON),
            {QStringLiteral("-c"),
                QStringLiteral("import os, pickle, sys\n"
                               "class Evil:\n"
                               "    def __reduce__(self):\n"
                               "        return (os.system, ('touch ' + sys.argv[2],))\n"
                               "open(sys.argv[1], 'wb').write(pickle.dumps(Evil()))\n"),
                dcp + QStringLiteral("/.metadata"), marker});
        QVERIFY(python.waitForFinished(60000));
        QCOMPARE(python.exitCode(), 0);
        const CommandResult hostile = runInspect({QStringLiteral("info"), QStringLiteral("--json"), dcp});
        QCOMPARE(hostile.exitCode, 3);
        QVERIFY2(hostile.out.contains("posix.system"), hostile.out.left(2000).constData());
        QVERIFY(!QFileInfo::exists(marker));
    }

    void intactSetsCheckClean()
    {
        QCOMPARE(runInspect({QStringLiteral("check"), sharded(QStringLiteral("bin_cpu"))}).exitCode, 0);
        QCOMPARE(runInspect({QStringLiteral("check"), sharded(QStringLiteral("safetensors"))}).exitCode, 0);
        // DCP's .metadata is a plain pickle of DCP's dataclasses and a pathlib.PosixPath, read by DCP
        // with pickle.load: every class is vetted inert (issue 24), so it is known inert and clean.
        const CommandResult dcp
            = runInspect({QStringLiteral("check"), QStringLiteral("--json"), sharded(QStringLiteral("dcp"))});
        QVERIFY2(dcp.exitCode == 0, qPrintable(describe(dcp)));
        const JsonValue dcpReport = parse(dcp.out);
        QCOMPARE(dcpReport.member("safety").member("rating").toString(), std::string("known-inert"));
        for (const JsonValue& finding : dcpReport.member("findings").items())
            QVERIFY2(finding.member("severity").toString() != "error"
                    || finding.member("code").toString() == "unsafe-pickle",
                qPrintable(show(finding)));
        // Recorded on two GPUs: torch.load fails on this machine unless it has them; the shards
        // differing in devices is said, as information.
        const CommandResult cuda
            = runInspect({QStringLiteral("check"), QStringLiteral("--json"), QStringLiteral("--target"),
                QStringLiteral("cuda:0=8GiB,cuda:1=8GiB,cpu=16GiB"), sharded(QStringLiteral("bin_cuda"))});
        QVERIFY2(cuda.exitCode == 0, qPrintable(describe(cuda)));
        QVERIFY(cuda.out.contains("shard-devices-differ"));
    }

    // A remapped .bin folder: torch sees exactly the planned tags on every shard, every storage's
    // bytes are the input's, and from_pretrained loads it when planned to the CPU.
    void remappedFolderLoadsWithTorchAndTransformers_data()
    {
        QTest::addColumn<QString>("fixture");
        QTest::addColumn<QStringList>("rules");
        QTest::addColumn<bool>("fromPretrained");
        QTest::newRow("cuda:0/cuda:1 -> cpu")
            << QStringLiteral("bin_cuda") << QStringList {QStringLiteral("--map"), QStringLiteral("*=cpu")}
            << true;
        QTest::newRow("cpu -> mixed")
            << QStringLiteral("bin_cpu")
            << QStringList {QStringLiteral("--module"), QStringLiteral("model.layers.2=cuda:1"),
                   QStringLiteral("--tensor"), QStringLiteral("model.norm.weight=cuda:0")}
            << false;
    }
    void remappedFolderLoadsWithTorchAndTransformers()
    {
        QFETCH(QString, fixture);
        QFETCH(QStringList, rules);
        QFETCH(bool, fromPretrained);
        if (QStringLiteral(CKPT_MODERN_PYTHON).isEmpty())
            QSKIP("no modern torch configured (CKPT_MODERN_PYTHON is empty)");
        QTemporaryDir work;
        const QString out = work.filePath(QStringLiteral("remapped"));
        const CommandResult result = runInspect(QStringList {QStringLiteral("remap"), sharded(fixture),
                                                    QStringLiteral("-o"), out, QStringLiteral("--json")}
            + rules);
        QVERIFY2(result.exitCode == 0, qPrintable(describe(result)));
        const JsonValue report = parse(result.out);
        QCOMPARE(report.member("rewritten"), JsonValue(true));
        QCOMPARE(report.member("shards").size(), std::size_t(3));
        for (const JsonValue& shard : report.member("shards").items())
            QCOMPARE(shard.member("verified"), JsonValue(true));
        // Nothing temporary is left beside the target.
        QCOMPARE(QDir(work.path()).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot),
            QStringList {QStringLiteral("remapped")});

        // The planned tag of every tensor, as the rules say it.
        JsonValue expected = JsonValue::emptyObject();
        const JsonValue info
            = parse(runInspect({QStringLiteral("info"), QStringLiteral("--json"), sharded(fixture)}).out);
        for (const JsonValue& tensor : info.member("tensors").items()) {
            const std::string name = tensor.member("name").toString();
            std::string tag = "cpu";
            if (fromPretrained)
                tag = "cpu";
            else if (name.starts_with("model.layers.2."))
                tag = "cuda:1";
            else if (name == "model.norm.weight")
                tag = "cuda:0";
            expected.insert(name, tag);
        }
        QFile expectedFile(work.filePath(QStringLiteral("expected.json")));
        QVERIFY(expectedFile.open(QIODevice::WriteOnly));
        expectedFile.write(QByteArray::fromStdString(expected.toJson()));
        expectedFile.close();
        QStringList arguments {QStringLiteral(CKPT_SOURCE_DIR "/tests/remap/verify_sharded.py"),
            sharded(fixture), out, expectedFile.fileName()};
        if (fromPretrained)
            arguments << QStringLiteral("--from-pretrained");
        const PythonResult verdict = runModernPython(arguments);
        QVERIFY2(verdict.exitCode == 0, verdict.err.right(3000).constData());
        const JsonValue judged = parse(verdict.out.trimmed().split('\n').last());
        QVERIFY2(judged.member("ok").toBool(), qPrintable(show(judged.member("problems"))));
        QCOMPARE(judged.member("tags").size(), std::size_t(38));
    }

    void remapRefusesBrokenSetsAndItsInput()
    {
        QTemporaryDir work;
        const CommandResult broken = runInspect(
            {QStringLiteral("remap"), sharded(QStringLiteral("broken_missing_shard")), QStringLiteral("-o"),
                work.filePath(QStringLiteral("out")), QStringLiteral("--map"), QStringLiteral("*=cpu")});
        QCOMPARE(broken.exitCode, 2);
        QVERIFY2(broken.err.contains("pytorch_model-00002-of-00003.bin"), broken.err.constData());
        QVERIFY(!QFileInfo::exists(work.filePath(QStringLiteral("out"))));
        const CommandResult self
            = runInspect({QStringLiteral("remap"), sharded(QStringLiteral("bin_cpu")), QStringLiteral("-o"),
                sharded(QStringLiteral("bin_cpu")), QStringLiteral("--map"), QStringLiteral("*=cpu")});
        QCOMPARE(self.exitCode, 2);
        QCOMPARE(QDir(sharded(QStringLiteral("bin_cpu"))).entryList(QDir::Files).size(), 5);
    }

    // Safetensors and DCP record no device: the plan is exported, nothing rewritten, and the
    // exported device_map loads with from_pretrained.
    void safetensorsExportDeviceMap()
    {
        QTemporaryDir work;
        const QString out = work.filePath(QStringLiteral("plan"));
        const CommandResult result = runInspect(
            {QStringLiteral("remap"), sharded(QStringLiteral("safetensors")), QStringLiteral("-o"), out,
                QStringLiteral("--map"), QStringLiteral("*=cpu"), QStringLiteral("--json")});
        QVERIFY2(result.exitCode == 0, qPrintable(describe(result)));
        const JsonValue report = parse(result.out);
        QCOMPARE(report.member("rewritten"), JsonValue(false));
        QVERIFY(report.member("why").toString().find("record no device") != std::string::npos);
        const JsonValue exported = readJsonFile(out + QStringLiteral("/device_map.json"));
        QCOMPARE(exported.member("device_map").member("model.layers.0").toString(), std::string("cpu"));
        QVERIFY(exported.member("max_memory").find("cpu"));
        const CommandResult gpu = runInspect({QStringLiteral("remap"), sharded(QStringLiteral("safetensors")),
            QStringLiteral("-o"), work.filePath(QStringLiteral("gpu")), QStringLiteral("--module"),
            QStringLiteral("model.layers.3=cuda:1")});
        QCOMPARE(gpu.exitCode, 0);
        QVERIFY(readJsonFile(work.filePath(QStringLiteral("gpu/device_map.json")))
                    .member("device_map")
                    .member("model.layers.3")
                    .isInteger());
        const CommandResult dcpResult
            = runInspect({QStringLiteral("remap"), sharded(QStringLiteral("dcp")), QStringLiteral("-o"),
                work.filePath(QStringLiteral("dcp")), QStringLiteral("--map"), QStringLiteral("*=cpu")});
        QCOMPARE(dcpResult.exitCode, 0);
        QVERIFY(dcpResult.out.contains("records no device"));
        QVERIFY(QFileInfo::exists(work.filePath(QStringLiteral("dcp/device_map.json"))));
        // DCP's loader script runs as it is (from_pretrained cannot read DCP): the two dicts.
        QProcess script;
        script.start(QStringLiteral(CKPT_LEGACY_PYTHON),
            {QStringLiteral("-c"),
                QStringLiteral("import sys; g = {}; exec(open(sys.argv[1]).read(), g); "
                               "print(sorted(set(g['device_map'].values())), list(g['max_memory']))"),
                work.filePath(QStringLiteral("dcp/load_with_device_map.py"))});
        QVERIFY(script.waitForFinished(60000));
        QVERIFY2(script.exitCode() == 0 && script.readAllStandardOutput().startsWith("['cpu'] ['cpu']"),
            script.readAllStandardError().constData());

        if (QStringLiteral(CKPT_MODERN_PYTHON).isEmpty())
            QSKIP("no modern torch configured (CKPT_MODERN_PYTHON is empty)");
        const PythonResult loaded = runModernPython({QStringLiteral("-c"),
            QStringLiteral("import json, sys, transformers\n"
                           "e = json.load(open(sys.argv[2]))\n"
                           "mm = {int(k) if k.isdigit() else k: v for k, v in e['max_memory'].items()}\n"
                           "m = transformers.AutoModelForCausalLM.from_pretrained(sys.argv[1], "
                           "device_map=e['device_map'], max_memory=mm)\n"
                           "print(sorted({str(p.device) for p in m.parameters()}))\n"),
            sharded(QStringLiteral("safetensors")), out + QStringLiteral("/device_map.json")});
        QVERIFY2(loaded.exitCode == 0, loaded.err.right(3000).constData());
        QVERIFY2(loaded.out.contains("['cpu']"), loaded.out.constData());
    }

    // The plan of a folder that records no device is exported into a new folder, never into the
    // input folder or a folder inside it (issue 25: the CLI refused only the input folder itself,
    // the app neither), and the input is left byte for byte as it was.
    void exportNeverWritesIntoTheInput_data()
    {
        QTest::addColumn<QString>("fixture");
        QTest::addColumn<QString>("inside");
        for (const char* fixture : {"safetensors", "dcp"}) {
            QTest::addRow("%s, the input folder", fixture) << QString::fromLatin1(fixture) << QString();
            QTest::addRow("%s, a folder inside it", fixture)
                << QString::fromLatin1(fixture) << QStringLiteral("plan");
            QTest::addRow("%s, its path through ..", fixture)
                << QString::fromLatin1(fixture) << QStringLiteral("../") + QString::fromLatin1(fixture);
            // Outside the input by name only: a link to the input folder, and a new folder whose
            // device_map.json is a link to the input's own.
            QTest::addRow("%s, a link to the input folder", fixture)
                << QString::fromLatin1(fixture) << QStringLiteral("@link");
            QTest::addRow("%s, a link to one of its files", fixture)
                << QString::fromLatin1(fixture) << QStringLiteral("@linked-file");
        }
    }
    void exportNeverWritesIntoTheInput()
    {
        QFETCH(QString, fixture);
        QFETCH(QString, inside);
        QTemporaryDir work;
        const QString input = ckpt::testing::copyFolderWithOwnDeviceMap(sharded(fixture), work, fixture);
        QVERIFY(!input.isEmpty());
        const std::map<QString, QByteArray> before = ckpt::testing::folderBytes(input);
        QString out = inside.isEmpty() ? input : input + u'/' + inside;
        if (inside == QStringLiteral("@link")) {
            out = work.filePath(QStringLiteral("link"));
            QVERIFY(QFile::link(input, out));
        } else if (inside == QStringLiteral("@linked-file")) {
            out = work.filePath(QStringLiteral("new"));
            QVERIFY(QDir().mkpath(out));
            QVERIFY(QFile::link(
                input + QStringLiteral("/device_map.json"), out + QStringLiteral("/device_map.json")));
        }
        for (const QStringList& command : {QStringList {QStringLiteral("remap"), input, QStringLiteral("-o"),
                                               out, QStringLiteral("--map"), QStringLiteral("*=cpu")},
                 QStringList {QStringLiteral("plan"), input, QStringLiteral("--target"),
                     QStringLiteral("cpu=64GiB"), QStringLiteral("--save"), out}}) {
            const CommandResult result = runInspect(command);
            QVERIFY2(result.exitCode == 2, qPrintable(describe(result)));
            QVERIFY2(result.err.contains("input folder"), qPrintable(describe(result)));
            QVERIFY(ckpt::testing::folderBytes(input) == before);
        }
    }

    // The reference: accelerate's infer_auto_device_map for the same model and the same max_memory,
    // printed beside ours with every difference explained.
    void planBesideAccelerate_data()
    {
        QTest::addColumn<qint64>("perGpu");
        QTest::newRow("ample: everything on cuda:0") << qint64(10'000'000);
        QTest::newRow("300 kB per GPU") << qint64(300'000);
        QTest::newRow("200 kB per GPU") << qint64(200'000);
    }
    void planBesideAccelerate()
    {
        QFETCH(qint64, perGpu);
        if (QStringLiteral(CKPT_MODERN_PYTHON).isEmpty())
            QSKIP("no modern torch configured (CKPT_MODERN_PYTHON is empty)");
        const QString folder = sharded(QStringLiteral("bin_cpu"));
        const QString gpu = QString::number(perGpu);
        const PythonResult reference
            = runModernPython({QStringLiteral(CKPT_SOURCE_DIR "/tests/remap/accelerate_device_map.py"),
                folder, u"{\"0\": "_qs + gpu + u", \"1\": "_qs + gpu + u", \"cpu\": 1000000000}"_qs});
        QVERIFY2(reference.exitCode == 0, reference.err.right(3000).constData());
        const JsonValue theirs = parse(reference.out.trimmed().split('\n').last()).member("device_map");
        auto ours = [&](qint64 firstGpu) {
            const CommandResult result
                = runInspect({QStringLiteral("plan"), folder, QStringLiteral("--target"),
                    u"cuda:0="_qs + QString::number(firstGpu) + u",cuda:1="_qs + gpu + u",cpu=1000000000"_qs,
                    QStringLiteral("--strategy"), QStringLiteral("sequential"), QStringLiteral("--context"),
                    QStringLiteral("0"), QStringLiteral("--headroom"), QStringLiteral("0"),
                    QStringLiteral("--export"), QStringLiteral("device-map")});
            return parse(result.out);
        };
        // accelerate's answer for a block: its own entry or the nearest enclosing one ("" = all).
        auto accelerateDevice = [&](std::string name) -> JsonValue {
            while (true) {
                if (const JsonValue* device = theirs.find(name))
                    return *device;
                if (name.empty())
                    return {};
                const std::size_t dot = name.rfind('.');
                name = dot == std::string::npos ? std::string() : name.substr(0, dot);
            }
        };
        const JsonValue same = ours(perGpu);
        QVERIFY(same.isObject() && same.size() == 6);
        // The largest block (a LlamaDecoderLayer): accelerate keeps that much free on its main GPU
        // (cuda:0) so that layers offloaded to the CPU can be brought in one at a time.
        const std::int64_t largestBlock = 139'776;
        const JsonValue reserved = ours(std::max<qint64>(perGpu - largestBlock, 0));
        QString table = u"\nblock               ours   accelerate   ours with accelerate's reservation\n"_qs;
        for (const JsonMember& block : same.members()) {
            const JsonValue reference = accelerateDevice(block.key);
            QString why;
            if (!(block.value == reference))
                why = u"  <- differs: accelerate reserves the largest layer ("_qs
                    + QString::number(largestBlock)
                    + u" B) on cuda:0 for offloading; we reserve the CUDA context and headroom instead (0 here)"_qs;
            table += QString::fromStdString(block.key).leftJustified(20) + show(block.value).leftJustified(7)
                + show(reference).leftJustified(13) + show(reserved.member(block.key)) + why + u"\n"_qs;
            // With the same reservation, the answers are the same, block by block.
            QVERIFY2(reserved.member(block.key) == reference, qPrintable(table));
        }
        // Tied weights: accelerate places lm_head with the embedding it is tied to; no shard holds
        // lm_head (save_pretrained drops tied copies), so ours has no entry and from_pretrained ties it
        // to model.embed_tokens wherever that goes. model.rotary_emb holds no weights in the checkpoint.
        if (theirs.find("lm_head")) {
            QCOMPARE(theirs.member("lm_head"), accelerateDevice("model.embed_tokens"));
            table += u"lm_head             -      "_qs + show(theirs.member("lm_head"))
                + u"  tied to model.embed_tokens: in no shard, tied again by from_pretrained\n"_qs;
        }
        QVERIFY(!same.find("lm_head"));
        qInfo("%s", qPrintable(table));
    }

    // Tensor names come from the file: the exported Python must parse and name them exactly.
    void exportedPythonSurvivesHostileNames()
    {
        if (QStringLiteral(CKPT_MODERN_PYTHON).isEmpty())
            QSKIP("no modern torch configured (CKPT_MODERN_PYTHON is empty)");
        QTemporaryDir work;
        const QString folder = work.filePath(QStringLiteral("model"));
        QVERIFY(QDir().mkpath(folder));
        const PythonResult written = runModernPython({QStringLiteral("-c"),
            QStringLiteral("import sys, torch\n"
                           "from safetensors.torch import save_file\n"
                           "save_file({\"a');import os;os.system('touch x')#.w\": torch.zeros(2),\n"
                           "           \"b\\nprint(1)\\x1b[2J.w\": torch.ones(2)}, sys.argv[1] + "
                           "'/model.safetensors')\n"),
            folder});
        QVERIFY2(written.exitCode == 0, written.err.right(2000).constData());
        const QString out = work.filePath(QStringLiteral("plan"));
        const CommandResult result = runInspect({QStringLiteral("remap"), folder, QStringLiteral("-o"), out,
            QStringLiteral("--map"), QStringLiteral("*=cpu")});
        QVERIFY2(result.exitCode == 0, qPrintable(describe(result)));
        QVERIFY(!result.out.contains("\x1b[2J")); // nothing reaches the terminal raw
        const PythonResult parsed = runModernPython({QStringLiteral("-c"),
            QStringLiteral("import ast, sys\n"
                           "tree = ast.parse(open(sys.argv[1]).read())\n"
                           "d = next(n.value for n in tree.body if isinstance(n, ast.Assign) and "
                           "n.targets[0].id == 'device_map')\n"
                           "print(sorted(ast.literal_eval(d)))\n"),
            out + QStringLiteral("/load_with_device_map.py")});
        QVERIFY2(parsed.exitCode == 0, parsed.err.right(2000).constData());
        // Python's repr of the parsed keys: exactly the names' block prefixes, quotes and escapes intact.
        QVERIFY2(parsed.out.contains("\"a');import os;os.system('touch x')#\""), parsed.out.constData());
        QVERIFY2(parsed.out.contains("'b\\nprint(1)\\x1b'"), parsed.out.constData());
        QVERIFY(!QFileInfo::exists(QStringLiteral("x")));
    }

    void planAcrossShardsSavesAFolder()
    {
        QTemporaryDir work;
        const QString out = work.filePath(QStringLiteral("planned"));
        const CommandResult result = runInspect(
            {QStringLiteral("plan"), sharded(QStringLiteral("bin_cuda")), QStringLiteral("--target"),
                QStringLiteral("cpu=1GiB"), QStringLiteral("--json"), QStringLiteral("--save"), out});
        QVERIFY2(result.exitCode == 0, qPrintable(describe(result)));
        const JsonValue plan = parse(result.out);
        std::uint64_t planned = 0;
        for (const JsonValue& line : plan.member("ledger").items())
            planned += line.member("planned_bytes").toUInt64().value_or(0);
        QCOMPARE(planned, std::uint64_t(583'936)); // every storage of the three shards, once
        const JsonValue info = parse(runInspect({QStringLiteral("info"), QStringLiteral("--json"), out}).out);
        QCOMPARE(info.member("tensors").size(), std::size_t(38));
        for (const JsonValue& tensor : info.member("tensors").items())
            QCOMPARE(tensor.member("device").toString(), std::string("cpu"));
    }
};

QTEST_GUILESS_MAIN(TestShardedCommands)
#include "tst_sharded.moc"
