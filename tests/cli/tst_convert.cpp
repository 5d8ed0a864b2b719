// SPDX-License-Identifier: MIT
// `ckpt-inspect convert` judged by the real safetensors library, torch and transformers (the
// modern-torch root): conversions hold exactly torch's tensors (views as contiguous copies, shared
// storages as separate copies), shards load with from_pretrained, unsupported dtypes are refused
// before anything is written, and safetensors converts back to a torch file with chosen device tags
// that torch 1.13 and the modern torch load with weights_only=True.
#include "fixturecomparison.h"

#include <QDir>
#include <QFileInfo>
#include <QTemporaryDir>

#include <set>

namespace {

const QString kChecker = QStringLiteral(CKPT_SOURCE_DIR "/tests/convert/check_safetensors.py");
const QString kTransformers = QStringLiteral(CKPT_SOURCE_DIR "/tests/convert/check_transformers.py");
const QString kFolderChecker = QStringLiteral(CKPT_SOURCE_DIR "/tests/convert/check_folder_conversion.py");
const QString kWeightsChecker = QStringLiteral(CKPT_SOURCE_DIR "/tests/convert/check_weights_export.py");

QString sharded(const QString& name)
{
    return fixturesDir() + QStringLiteral("/sharded/") + name;
}

} // namespace

class TestConvert : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString m_modern;

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_modern = QStringLiteral(CKPT_MODERN_PYTHON);
        if (m_modern.isEmpty()
            || runProgram(
                   m_modern, {QStringLiteral("-c"), QStringLiteral("import safetensors, transformers")})
                    .exitCode
                != 0)
            QSKIP("the modern-torch root (safetensors, transformers) is not available");
    }

    void holdsExactlyTorchsTensors_data()
    {
        QTest::addColumn<QString>("fixture");
        for (const char* torch : {"torch-1.13", "torch-2"})
            for (const char* name : {"state_dict", "views_and_strides", "tied_weights", "legacy_state_dict"})
                QTest::addRow("%s/%s", torch, name) << fixturesDir() + u'/' + QString::fromLatin1(torch)
                        + u'/' + QString::fromLatin1(name) + u".pt"_qs;
    }

    void holdsExactlyTorchsTensors()
    {
        QFETCH(QString, fixture);
        const QString output = m_dir.filePath(QFileInfo(fixture).dir().dirName() + u'-'
            + QFileInfo(fixture).completeBaseName() + u".safetensors"_qs);
        const CommandResult converted
            = runInspect({QStringLiteral("convert"), fixture, QStringLiteral("-o"), output});
        QVERIFY2(converted.exitCode == 0, qPrintable(describe(converted)));
        QVERIFY(converted.out.contains("verified"));
        const CommandResult checked
            = runProgram(m_modern, {kChecker, QStringLiteral("to-safetensors"), fixture, output});
        QVERIFY2(checked.exitCode == 0, qPrintable(describe(checked)));
    }

    void sharedStoragesAndViewsAreCopies()
    {
        const QString fixture = fixturesDir() + u"/torch-2/views_and_strides.pt"_qs;
        const CommandResult converted = runInspect({QStringLiteral("convert"), fixture, QStringLiteral("-o"),
            m_dir.filePath(QStringLiteral("views.safetensors")), QStringLiteral("--json")});
        QVERIFY2(converted.exitCode == 0, qPrintable(describe(converted)));
        const JsonValue report = parse(converted.out);
        QVERIFY(report.member("shared_written_as_copies").size() > 0);
        bool transposed = false;
        for (const JsonValue& name : report.member("views_made_contiguous").items())
            transposed = transposed || name.toString() == "transposed";
        QVERIFY2(transposed, converted.out.constData());
    }

    void shardsLoadWithFromPretrained()
    {
        const QString original = m_dir.filePath(QStringLiteral("gpt2"));
        const QString sharded = m_dir.filePath(QStringLiteral("gpt2-safetensors"));
        const CommandResult made = runProgram(m_modern, {kTransformers, QStringLiteral("make"), original});
        QVERIFY2(made.exitCode == 0, qPrintable(describe(made)));
        const CommandResult converted = runInspect({QStringLiteral("convert"), original, QStringLiteral("-o"),
            sharded, QStringLiteral("--max-shard-size"), QStringLiteral("20KiB"), QStringLiteral("--json")});
        QVERIFY2(converted.exitCode == 0, qPrintable(describe(converted)));
        const JsonValue report = parse(converted.out);
        QVERIFY(report.member("shards").size() > 1);
        QVERIFY(QFileInfo::exists(sharded + u"/model.safetensors.index.json"_qs));
        QVERIFY(QFile::copy(original + u"/config.json"_qs, sharded + u"/config.json"_qs));
        const CommandResult loaded
            = runProgram(m_modern, {kTransformers, QStringLiteral("verify"), original, sharded});
        QVERIFY2(loaded.exitCode == 0, qPrintable(describe(loaded)));
        const CommandResult checked = runProgram(m_modern,
            {kChecker, QStringLiteral("to-safetensors"), original + u"/pytorch_model.bin"_qs, sharded});
        QVERIFY2(checked.exitCode == 0, qPrintable(describe(checked)));
    }

    // Folders are read by the core's folder reader (as `info` reads them) and judged by the library
    // that wrote each: .bin shards by torch.load, safetensors shards by safetensors, a DCP folder by
    // torch's dcp_to_torch_save. Into one file and into shards.
    void foldersConvertAsTheirWritersReadThem_data()
    {
        QTest::addColumn<QString>("folder");
        QTest::addColumn<QString>("shardSize");
        for (const char* name : {"bin_cpu", "safetensors", "dcp"})
            for (const char* size : {"", "100KiB"})
                QTest::addRow("%s%s%s", name, *size ? " into shards of " : " into one file", size)
                    << QString::fromLatin1(name) << QString::fromLatin1(size);
    }
    void foldersConvertAsTheirWritersReadThem()
    {
        QFETCH(QString, folder);
        QFETCH(QString, shardSize);
        const QString output
            = m_dir.filePath(folder + u'-' + (shardSize.isEmpty() ? u"one.safetensors"_qs : shardSize));
        QStringList arguments {QStringLiteral("convert"), sharded(folder), QStringLiteral("-o"), output,
            QStringLiteral("--json")};
        if (!shardSize.isEmpty())
            arguments << QStringLiteral("--max-shard-size") << shardSize;
        const CommandResult converted = runInspect(arguments);
        QVERIFY2(converted.exitCode == 0, qPrintable(describe(converted)));
        const JsonValue report = parse(converted.out);
        QVERIFY(report.member("verified").toBool());
        if (!shardSize.isEmpty())
            QVERIFY(report.member("shards").size() > 1);
        if (folder == u"dcp"_qs) {
            // DCP's non-tensor entries are pickled values: named as dropped, never unpickled.
            std::set<std::string> dropped;
            for (const JsonValue& item : report.member("inputs").at(0).member("dropped_objects").items())
                dropped.insert(item.member("path").toString());
            QVERIFY2(dropped.count("step") && dropped.count("note"), converted.out.constData());
        } else {
            QCOMPARE(report.member("inputs").size(), std::size_t(3)); // one per shard
        }
        const CommandResult checked = runProgram(m_modern, {kFolderChecker, sharded(folder), output});
        QVERIFY2(checked.exitCode == 0, qPrintable(describe(checked)));
    }

    // .bin shards into safetensors shards that transformers loads as the same model.
    void shardedFolderLoadsWithFromPretrained()
    {
        const QString output = m_dir.filePath(QStringLiteral("llama-safetensors"));
        const CommandResult converted
            = runInspect({QStringLiteral("convert"), sharded(QStringLiteral("bin_cpu")), QStringLiteral("-o"),
                output, QStringLiteral("--max-shard-size"), QStringLiteral("150KiB")});
        QVERIFY2(converted.exitCode == 0, qPrintable(describe(converted)));
        QVERIFY(QFileInfo::exists(output + u"/model.safetensors.index.json"_qs));
        QVERIFY(QFile::copy(sharded(QStringLiteral("bin_cpu/config.json")), output + u"/config.json"_qs));
        const CommandResult loaded = runProgram(m_modern,
            {kTransformers, QStringLiteral("verify-auto"), sharded(QStringLiteral("bin_cpu")), output});
        QVERIFY2(loaded.exitCode == 0, qPrintable(describe(loaded)));
    }

    // A folder with a shard missing converts nothing: the rest alone would lose weights silently.
    void brokenFolderIsRefused()
    {
        const QString output = m_dir.filePath(QStringLiteral("broken.safetensors"));
        const CommandResult result = runInspect({QStringLiteral("convert"),
            sharded(QStringLiteral("broken_missing_shard")), QStringLiteral("-o"), output});
        QCOMPARE(result.exitCode, 2);
        QVERIFY2(result.err.contains("pytorch_model-00002-of-00003.bin"), result.err.constData());
        QVERIFY(!QFileInfo::exists(output));
        const QString torchOutput = m_dir.filePath(QStringLiteral("broken.pt"));
        const CommandResult toTorch = runInspect({QStringLiteral("convert"),
            sharded(QStringLiteral("broken_missing_shard")), QStringLiteral("-o"), torchOutput});
        QCOMPARE(toTorch.exitCode, 2);
        QVERIFY(!QFileInfo::exists(torchOutput));
        // extract writes one file from one file, and says what to do with a folder.
        const CommandResult extracted
            = runInspect({QStringLiteral("extract"), sharded(QStringLiteral("bin_cpu")), QStringLiteral("-o"),
                m_dir.filePath(QStringLiteral("folder-extract.pt"))});
        QCOMPARE(extracted.exitCode, 2);
        QVERIFY2(extracted.err.contains("convert"), extracted.err.constData());
        QVERIFY(!QFileInfo::exists(m_dir.filePath(QStringLiteral("folder-extract.pt"))));
    }

    // A folder exports one plain state_dict too (the app's File > Export Weights… runs the same
    // task: tests/ui/tst_exportweights.cpp), which real torch loads with weights_only=True, tensors
    // equal to the folder's as the library that wrote it reads them.
    void folderExportsAStateDictTorchLoads_data()
    {
        QTest::addColumn<QString>("folder");
        for (const char* name : {"bin_cpu", "bin_cuda", "safetensors", "dcp"})
            QTest::newRow(name) << QString::fromLatin1(name);
    }
    void folderExportsAStateDictTorchLoads()
    {
        QFETCH(QString, folder);
        const QString output = m_dir.filePath(folder + u"-weights.pt"_qs);
        const CommandResult converted
            = runInspect({QStringLiteral("convert"), sharded(folder), QStringLiteral("-o"), output});
        QVERIFY2(converted.exitCode == 0, qPrintable(describe(converted)));
        QVERIFY2(converted.out.contains("verified"), converted.out.constData());
        if (folder == u"dcp"_qs) // its pickled entries are named, never unpickled
            QVERIFY2(converted.out.contains("step: a pickled value"), converted.out.constData());
        const QString python = folder == u"dcp"_qs ? m_modern : QStringLiteral(CKPT_LEGACY_PYTHON);
        const CommandResult checked = runProgram(python, {kWeightsChecker, sharded(folder), output});
        QVERIFY2(checked.exitCode == 0, qPrintable(describe(checked)));
    }

    // Every DCP (issue 26): torch 2.14's storage metadata and the Megatron-core-shaped folder, whose
    // tensors are saved in two chunks each (put back together from their torch.save archives), into
    // a state_dict and into safetensors, judged by torch's own dcp_to_torch_save of the folder. The
    // judge imports the stand-in MCoreMetadata (tests/fixtures/dcp/pysrc), as a Megatron user's
    // loader imports Megatron's; the inspector never imports anything.
    void everyDcpConvertsAsDcpLoadsIt_data()
    {
        QTest::addColumn<QString>("folder");
        QTest::addColumn<QString>("output");
        for (const char* name : {"plain", "multi", "standin", "megatron", "zstd"})
            for (const char* output : {"weights.pt", "weights.safetensors"})
                QTest::addRow("%s into %s", name, output)
                    << QString::fromLatin1(name) << QString::fromLatin1(output);
    }
    void everyDcpConvertsAsDcpLoadsIt()
    {
        QFETCH(QString, folder);
        QFETCH(QString, output);
        const QString input = fixturesDir() + QStringLiteral("/dcp/") + folder;
        const QString written = m_dir.filePath(QStringLiteral("dcp-") + folder + u'-' + output);
        const CommandResult converted
            = runInspect({QStringLiteral("convert"), input, QStringLiteral("-o"), written});
        QVERIFY2(converted.exitCode == 0, qPrintable(describe(converted)));
        QVERIFY2(converted.out.contains("verified"), converted.out.constData());
        QVERIFY2(converted.out.contains("a pickled value (BytesStorageMetadata)"), converted.out.constData());
        const QByteArray before = qgetenv("PYTHONPATH");
        // zstdshim: the `zstandard` calls torch's ZStandard extension makes, on Python's compression.zstd
        // (the sid root has neither zstandard nor pyzstd; tests/fixtures/dcp/README.md).
        qputenv("PYTHONPATH",
            QByteArrayLiteral(CKPT_SOURCE_DIR "/tests/fixtures/dcp/pysrc:" CKPT_SOURCE_DIR
                                              "/tests/fixtures/dcp/pysrc/zstdshim"));
        const CommandResult checked = runProgram(
            m_modern, {output.endsWith(u".pt"_qs) ? kWeightsChecker : kFolderChecker, input, written});
        qputenv("PYTHONPATH", before);
        QVERIFY2(checked.exitCode == 0, qPrintable(describe(checked)));
        QVERIFY2(checked.out.contains("4 tensors of a dcp folder equal"), qPrintable(describe(checked)));
    }

    // A DCP folder saved rank by rank (use_collectives=False: __0.metadata, __1.metadata): every
    // rank's tensors, named rankR:<key>, hold what DCP's load on that rank gave back (SHA-256 of the
    // bytes in per_rank.expected.json, computed by each rank's own load when it was written).
    void perRankDcpConvertsAsEachRankLoadsIt()
    {
        const QString input = fixturesDir() + QStringLiteral("/dcp/per_rank");
        const QString written = m_dir.filePath(QStringLiteral("dcp-per-rank.safetensors"));
        const CommandResult converted
            = runInspect({QStringLiteral("convert"), input, QStringLiteral("-o"), written});
        QVERIFY2(converted.exitCode == 0, qPrintable(describe(converted)));
        const CommandResult checked = runProgram(m_modern,
            {QStringLiteral("-c"),
                QStringLiteral(
                    "import hashlib, json, sys, torch\n"
                    "from safetensors.torch import load_file\n"
                    "got = load_file(sys.argv[2])\n"
                    "truth = json.load(open(sys.argv[1] + '.expected.json'))\n"
                    "want = {f'rank{r}:{k}': e['sha256'] for r, v in truth['ranks'].items()\n"
                    "        for k, e in v['loaded'].items() if 'sha256' in e}\n"
                    "assert sorted(got) == sorted(want), (sorted(got), sorted(want))\n"
                    "for k, t in got.items():\n"
                    "    h = hashlib.sha256(t.contiguous().view(torch.uint8).numpy().tobytes()).hexdigest()\n"
                    "    assert h == want[k], k\n"
                    "print(len(got), 'tensors equal')\n"),
                input, written});
        QVERIFY2(checked.exitCode == 0, qPrintable(describe(checked)));
        QVERIFY2(checked.out.contains("6 tensors equal"), qPrintable(describe(checked)));
    }

    // What a dangerous file leaves behind is named with the safety verdict's callables, in the
    // line the app shows too (tests/ui/tst_exportweights.cpp), whichever format is written.
    void dangerousFileNamesWhatItLeavesBehind()
    {
        for (const QString& name : {u"hostile.pt"_qs, u"hostile.safetensors"_qs}) {
            const QString input = QStringLiteral(CKPT_SOURCE_DIR "/tests/data/hostile/os_system.pt");
            // os_system.pt is no safetensors file: to a torch file is `extract`'s (the same task).
            const QString command = name.endsWith(u".pt"_qs) ? u"extract"_qs : u"convert"_qs;
            const CommandResult result
                = runInspect({command, input, QStringLiteral("-o"), m_dir.filePath(name)});
            QVERIFY2(result.exitCode == 0, qPrintable(describe(result)));
            QVERIFY2(
                result.out.contains("  classes and functions named by the input, never imported and not in "
                                    "the output: posix.system\n"),
                result.out.constData());
        }
    }

    void refusesDtypesSafetensorsCannotName()
    {
        const QString output = m_dir.filePath(QStringLiteral("dtypes.safetensors"));
        const CommandResult result = runInspect({QStringLiteral("convert"),
            fixturesDir() + u"/torch-2/dtypes.pt"_qs, QStringLiteral("-o"), output});
        QCOMPARE(result.exitCode, 2);
        QVERIFY2(
            result.err.contains("complex128") && result.err.contains("no name for"), result.err.constData());
        QVERIFY(!QFileInfo::exists(output));
        // Leaving them out works.
        const CommandResult selected
            = runInspect({QStringLiteral("convert"), fixturesDir() + u"/torch-2/dtypes.pt"_qs,
                QStringLiteral("-o"), output, QStringLiteral("--select"), QStringLiteral("float32"),
                QStringLiteral("--select"), QStringLiteral("bfloat16")});
        QVERIFY2(selected.exitCode == 0, qPrintable(describe(selected)));
    }

    void backToTorchWithChosenDevices()
    {
        const QString fixture = fixturesDir() + u"/torch-2/state_dict.pt"_qs;
        const QString safetensors = m_dir.filePath(QStringLiteral("roundtrip.safetensors"));
        const QString back = m_dir.filePath(QStringLiteral("roundtrip.pt"));
        QCOMPARE(
            runInspect({QStringLiteral("convert"), fixture, QStringLiteral("-o"), safetensors}).exitCode, 0);
        const CommandResult converted = runInspect({QStringLiteral("convert"), safetensors,
            QStringLiteral("-o"), back, QStringLiteral("--device"), QStringLiteral("cuda:1")});
        QVERIFY2(converted.exitCode == 0, qPrintable(describe(converted)));
        const CommandResult modern = runProgram(
            m_modern, {kChecker, QStringLiteral("to-torch"), safetensors, back, QStringLiteral("cuda:1")});
        QVERIFY2(modern.exitCode == 0, qPrintable(describe(modern)));
        const CommandResult legacy = runProgram(QStringLiteral(CKPT_LEGACY_PYTHON),
            {kChecker, QStringLiteral("to-torch-ref"), fixture, back, QStringLiteral("cuda:1")});
        QVERIFY2(legacy.exitCode == 0, qPrintable(describe(legacy)));
        // Without --device the storages are recorded on the CPU.
        const QString cpu = m_dir.filePath(QStringLiteral("roundtrip-cpu.pt"));
        QCOMPARE(runInspect({QStringLiteral("convert"), safetensors, QStringLiteral("-o"), cpu}).exitCode, 0);
        const CommandResult onCpu = runProgram(
            m_modern, {kChecker, QStringLiteral("to-torch"), safetensors, cpu, QStringLiteral("cpu")});
        QVERIFY2(onCpu.exitCode == 0, qPrintable(describe(onCpu)));
    }
};

QTEST_GUILESS_MAIN(TestConvert)
#include "tst_convert.moc"
