// `ckpt-inspect convert` judged by the real safetensors library, torch and transformers (the
// modern-torch root): conversions hold exactly torch's tensors (views as contiguous copies, shared
// storages as separate copies), shards load with from_pretrained, unsupported dtypes are refused
// before anything is written, and safetensors converts back to a torch file with chosen device tags
// that torch 1.13 and the modern torch load with weights_only=True.
#include "fixturecomparison.h"

#include <QDir>
#include <QFileInfo>
#include <QTemporaryDir>

namespace {

const QString kChecker = QStringLiteral(CKPT_SOURCE_DIR "/tests/convert/check_safetensors.py");
const QString kTransformers = QStringLiteral(CKPT_SOURCE_DIR "/tests/convert/check_transformers.py");

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
