// SPDX-License-Identifier: MIT
// torch.export archives (.pt2) through the real ckpt-inspect: `info --json` against what torch 2.14's
// torch.export.load reads from the fixtures (tests/fixtures/torch-export/), the AOTInductor package
// rated as code, and `remap`: copies whose configs record the planned devices, judged by torch 2.14
// itself (tests/fixtures/torch-export/check_remap.py: torch's own reading of the configs, the
// devices torch.export.load asks for, every tensor and every record's bytes against the original's;
// a copy remapped back to the CPU is loaded and run for real). One interpreter for every copy.
#include "fixturecomparison.h"

#include <QDir>
#include <QTemporaryDir>

namespace {

QString fixture(const QString& name)
{
    return fixturesDir() + QStringLiteral("/torch-export/") + name;
}

JsonValue infoJson(const QString& path)
{
    const CommandResult run = runInspect({QStringLiteral("info"), QStringLiteral("--json"), path});
    return parse(run.out);
}

const JsonValue* tensorNamed(const JsonValue& info, const std::string& name)
{
    for (const JsonValue& tensor : info.member("tensors").items())
        if (tensor.member("name").toString() == name)
            return &tensor;
    return nullptr;
}

bool hasCode(const JsonValue& info, const std::string& code)
{
    for (const JsonValue& finding : info.member("findings").items())
        if (finding.member("code").toString() == code)
            return true;
    return false;
}

} // namespace

class TestPt2 : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void infoAgreesWithTorch_data();
    void infoAgreesWithTorch();
    void aotInductorPackageIsCode();
    void truncatedArchive();
    void remapLoadsInTorch();
    void legacyLayoutIsNotRemapped();

private:
    QTemporaryDir m_dir;
};

void TestPt2::infoAgreesWithTorch_data()
{
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("expected");
    QTest::newRow("pt2") << QStringLiteral("small.pt2") << QStringLiteral("small.expected.json");
    QTest::newRow("torch 2.1-2.5") << QStringLiteral("legacy_2_5.pt2")
                                   << QStringLiteral("legacy_2_5.expected.json");
}

void TestPt2::infoAgreesWithTorch()
{
    QFETCH(QString, file);
    QFETCH(QString, expected);
    const JsonValue info = infoJson(fixture(file));
    QVERIFY2(info.isObject(), "info --json printed no JSON");
    QCOMPARE(QString::fromStdString(info.member("format").toString()), QStringLiteral("torch-export"));
    QCOMPARE(QString::fromStdString(info.member("safety").member("rating").toString()),
        QStringLiteral("known-inert"));
    QFile expectedFile(fixture(expected));
    QVERIFY(expectedFile.open(QIODevice::ReadOnly));
    const JsonValue truth = parse(expectedFile.readAll());
    std::size_t rows = 0;
    for (const char* list : {"tensors", "sample_inputs"})
        for (const JsonValue& row : truth.member(list).items()) {
            const std::string& kind = row.member("kind").toString();
            const std::string prefix = kind == "state_dict" ? "state_dict."
                : kind == "constant"                        ? "constants."
                                                            : "sample_inputs.0.";
            const std::string name = prefix + row.member("name").toString();
            const JsonValue* tensor = tensorNamed(info, name);
            QVERIFY2(tensor, name.c_str());
            ++rows;
            for (const char* field : {"dtype", "shape", "stride", "storage_offset", "device"})
                QVERIFY2(tensor->member(field) == row.member(field),
                    qPrintable(
                        QString::fromStdString(name + " " + field + ": " + tensor->member(field).toJson()
                            + " where torch.export.load says " + row.member(field).toJson())));
            if (kind != "sample_input")
                QVERIFY2(tensor->member("is_parameter") == row.member("is_parameter"), name.c_str());
        }
    QCOMPARE(info.member("tensors").size(), rows);
}

void TestPt2::aotInductorPackageIsCode()
{
    const JsonValue info = infoJson(fixture(QStringLiteral("aoti_stub.pt2")));
    QCOMPARE(QString::fromStdString(info.member("safety").member("rating").toString()),
        QStringLiteral("dangerous"));
    QVERIFY(hasCode(info, "export-compiled-code"));
    // Its weights are listed all the same.
    QVERIFY(tensorNamed(info, "state_dict.lin.weight"));
    // A remap without the override is refused (exit 4), as for any file that carries code.
    const CommandResult refused = runInspect({QStringLiteral("remap"),
        fixture(QStringLiteral("aoti_stub.pt2")), QStringLiteral("-o"),
        m_dir.filePath(QStringLiteral("aoti.pt2")), QStringLiteral("--map"), QStringLiteral("cpu=cuda:0")});
    QVERIFY2(refused.exitCode == 4, qPrintable(describe(refused)));
    QVERIFY(!QFile::exists(m_dir.filePath(QStringLiteral("aoti.pt2"))));
}

void TestPt2::truncatedArchive()
{
    QFile whole(fixture(QStringLiteral("small.pt2")));
    QVERIFY(whole.open(QIODevice::ReadOnly));
    const QByteArray bytes = whole.readAll();
    const QString cut = m_dir.filePath(QStringLiteral("cut.pt2"));
    QFile out(cut);
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(bytes.left(3000)); // the weights config is whole, the program and constants are not
    out.close();
    const JsonValue info = infoJson(cut);
    QCOMPARE(QString::fromStdString(info.member("format").toString()), QStringLiteral("torch-export"));
    QVERIFY(hasCode(info, "export-config-missing"));
    QVERIFY(tensorNamed(info, "state_dict.lin.weight"));
    const CommandResult remap = runInspect(
        {QStringLiteral("remap"), cut, QStringLiteral("-o"), m_dir.filePath(QStringLiteral("cut-copy.pt2")),
            QStringLiteral("--map"), QStringLiteral("cpu=cuda:0")});
    QCOMPARE(remap.exitCode, 2);
}

void TestPt2::remapLoadsInTorch()
{
    const QString input = fixture(QStringLiteral("small.pt2"));
    const QString mixed = m_dir.filePath(QStringLiteral("mixed.pt2"));
    const QString back = m_dir.filePath(QStringLiteral("back.pt2"));
    CommandResult run = runInspect({QStringLiteral("remap"), input, QStringLiteral("-o"), mixed,
        QStringLiteral("--map"), QStringLiteral("cpu=cuda:1"), QStringLiteral("--module"),
        QStringLiteral("state_dict.lin=cuda:0"), QStringLiteral("--json")});
    QVERIFY2(run.exitCode == 0, qPrintable(describe(run)));
    const JsonValue copy = infoJson(mixed);
    QCOMPARE(QString::fromStdString(tensorNamed(copy, "state_dict.lin.bias")->member("device").toString()),
        QStringLiteral("cuda:0"));
    QCOMPARE(QString::fromStdString(tensorNamed(copy, "constants.const")->member("device").toString()),
        QStringLiteral("cuda:1"));
    // Nested torch.save files keep their devices: the sample inputs stay on the CPU.
    QCOMPARE(QString::fromStdString(tensorNamed(copy, "sample_inputs.0.0")->member("device").toString()),
        QStringLiteral("cpu"));
    run = runInspect({QStringLiteral("remap"), mixed, QStringLiteral("-o"), back, QStringLiteral("--map"),
        QStringLiteral("*=cpu")});
    QVERIFY2(run.exitCode == 0, qPrintable(describe(run)));

    const QString modern = QStringLiteral(CKPT_MODERN_PYTHON);
    if (modern.isEmpty())
        QSKIP("no modern torch configured (CKPT_MODERN_PYTHON is empty): the copies are not loaded by torch");
    const QString mixedDevices = QStringLiteral(
        R"({"lin.weight": "cuda:0", "lin.bias": "cuda:0", "head.weight": "cuda:1", "tied.weight": "cuda:1",)"
        R"( "scale": "cuda:1", "window": "cuda:1", "const": "cuda:1"})");
    const QString cpuDevices = QStringLiteral(
        R"({"lin.weight": "cpu", "lin.bias": "cpu", "head.weight": "cpu", "tied.weight": "cpu",)"
        R"( "scale": "cpu", "window": "cpu", "const": "cpu"})");
    const CommandResult judged = runProgram(modern,
        {fixture(QStringLiteral("check_remap.py")), input, mixed, mixedDevices, back, cpuDevices}, 300'000);
    QVERIFY2(judged.exitCode == 0, qPrintable(describe(judged)));
    QVERIFY2(judged.out.count("ok ") == 2, qPrintable(describe(judged)));
}

void TestPt2::legacyLayoutIsNotRemapped()
{
    // A use_pickle weight records its device inside its nested torch.save file: a plan moving it
    // is refused, naming it (the override is given: TwoTensor is not a vetted class).
    const CommandResult nested = runInspect({QStringLiteral("remap"), fixture(QStringLiteral("subclass.pt2")),
        QStringLiteral("-o"), m_dir.filePath(QStringLiteral("subclass.pt2")), QStringLiteral("--map"),
        QStringLiteral("cpu=cuda:0"), QStringLiteral("--allow-dangerous")});
    QCOMPARE(nested.exitCode, 2);
    QVERIFY2(nested.err.contains("state_dict.pair") && nested.err.contains("nested torch.save"),
        qPrintable(describe(nested)));
    // Moving only the raw weights is written.
    const CommandResult raw = runInspect({QStringLiteral("remap"), fixture(QStringLiteral("subclass.pt2")),
        QStringLiteral("-o"), m_dir.filePath(QStringLiteral("subclass-raw.pt2")), QStringLiteral("--module"),
        QStringLiteral("state_dict.lin=cuda:0"), QStringLiteral("--allow-dangerous")});
    QVERIFY2(raw.exitCode == 0, qPrintable(describe(raw)));

    const CommandResult run = runInspect({QStringLiteral("remap"), fixture(QStringLiteral("legacy_2_5.pt2")),
        QStringLiteral("-o"), m_dir.filePath(QStringLiteral("legacy.pt2")), QStringLiteral("--map"),
        QStringLiteral("cpu=cuda:0")});
    QCOMPARE(run.exitCode, 2);
    QVERIFY2(run.err.contains("2.1-2.5 layout"), qPrintable(describe(run)));
}

QTEST_GUILESS_MAIN(TestPt2)
#include "tst_pt2.moc"
