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
    void fakedCudaRemappedToCpuLoads();
    void nestedFilesAreRewritten();
    void aotInductorWeightIsNotMoved();
    void damagedNestedFileIsNotRewritten();

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
    QTest::newRow("recorded on cuda:0 and cuda:1")
        << QStringLiteral("cuda_faked.pt2") << QStringLiteral("cuda_faked.expected.json");
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

// The weights recorded on cuda:0 and cuda:1 (cuda_faked.pt2) remapped to the CPU: the copy's configs
// say cpu, torch.export.load asks for no GPU, loads every weight with the original's bytes and runs
// the program.
void TestPt2::fakedCudaRemappedToCpuLoads()
{
    const QString input = fixture(QStringLiteral("cuda_faked.pt2"));
    const QString copy = m_dir.filePath(QStringLiteral("faked-cpu.pt2"));
    const CommandResult run = runInspect({QStringLiteral("remap"), input, QStringLiteral("-o"), copy,
        QStringLiteral("--map"), QStringLiteral("*=cpu")});
    QVERIFY2(run.exitCode == 0, qPrintable(describe(run)));
    const JsonValue info = infoJson(copy);
    for (const JsonValue& tensor : info.member("tensors").items())
        QCOMPARE(QString::fromStdString(tensor.member("device").toString()), QStringLiteral("cpu"));
    const QString modern = QStringLiteral(CKPT_MODERN_PYTHON);
    if (modern.isEmpty())
        QSKIP("no modern torch configured (CKPT_MODERN_PYTHON is empty): the copy is not loaded by torch");
    const QString cpuDevices = QStringLiteral(
        R"({"lin.weight": "cpu", "lin.bias": "cpu", "head.weight": "cpu", "tied.weight": "cpu",)"
        R"( "scale": "cpu", "window": "cpu", "const": "cpu"})");
    const CommandResult judged
        = runProgram(modern, {fixture(QStringLiteral("check_remap.py")), input, copy, cpuDevices}, 300'000);
    QVERIFY2(judged.exitCode == 0 && judged.out.count("ok ") == 1, qPrintable(describe(judged)));
}

// Devices recorded inside nested torch.save files: the torch 2.1-2.5 layout's state dict and
// constants, a use_pickle weight (subclass.pt2's TwoTensor). The copy rewrites those files with the
// project's zip remap writer (the outer archive otherwise copied), and torch.load of each rewritten
// member (as torch.export.load loads it) records the planned devices, with the original's bytes.
void TestPt2::nestedFilesAreRewritten()
{
    const QString legacy = fixture(QStringLiteral("legacy_2_5.pt2"));
    const QString legacyCuda = m_dir.filePath(QStringLiteral("legacy-cuda.pt2"));
    const QString legacyBack = m_dir.filePath(QStringLiteral("legacy-back.pt2"));
    CommandResult run = runInspect({QStringLiteral("remap"), legacy, QStringLiteral("-o"), legacyCuda,
        QStringLiteral("--map"), QStringLiteral("cpu=cuda:1"), QStringLiteral("--module"),
        QStringLiteral("state_dict.lin=cuda:0")});
    QVERIFY2(run.exitCode == 0, qPrintable(describe(run)));
    JsonValue info = infoJson(legacyCuda);
    QCOMPARE(QString::fromStdString(tensorNamed(info, "state_dict.lin.weight")->member("device").toString()),
        QStringLiteral("cuda:0"));
    QCOMPARE(QString::fromStdString(tensorNamed(info, "state_dict.head.weight")->member("device").toString()),
        QStringLiteral("cuda:1"));
    QCOMPARE(QString::fromStdString(tensorNamed(info, "constants.const")->member("device").toString()),
        QStringLiteral("cuda:1"));
    // Sample inputs are no weights: they stay where they were.
    QCOMPARE(QString::fromStdString(tensorNamed(info, "sample_inputs.0.0")->member("device").toString()),
        QStringLiteral("cpu"));
    run = runInspect({QStringLiteral("remap"), legacyCuda, QStringLiteral("-o"), legacyBack,
        QStringLiteral("--map"), QStringLiteral("*=cpu")});
    QVERIFY2(run.exitCode == 0, qPrintable(describe(run)));

    const QString subclass = fixture(QStringLiteral("subclass.pt2"));
    const QString subclassCuda = m_dir.filePath(QStringLiteral("subclass-cuda.pt2"));
    const QString subclassBack = m_dir.filePath(QStringLiteral("subclass-back.pt2"));
    // TwoTensor is not a vetted class: the override is given.
    run = runInspect({QStringLiteral("remap"), subclass, QStringLiteral("-o"), subclassCuda,
        QStringLiteral("--map"), QStringLiteral("cpu=cuda:0"), QStringLiteral("--allow-dangerous")});
    QVERIFY2(run.exitCode == 0, qPrintable(describe(run)));
    info = infoJson(subclassCuda);
    // The wrapper and the tensors of its state (TwoTensor's a and b, each with a storage) alike.
    for (const char* name : {"state_dict.pair", "state_dict.pair[a]", "state_dict.pair[b]"}) {
        QVERIFY2(tensorNamed(info, name), name);
        QCOMPARE(QString::fromStdString(tensorNamed(info, name)->member("device").toString()),
            QStringLiteral("cuda:0"));
    }
    run = runInspect({QStringLiteral("remap"), subclassCuda, QStringLiteral("-o"), subclassBack,
        QStringLiteral("--map"), QStringLiteral("*=cpu"), QStringLiteral("--allow-dangerous")});
    QVERIFY2(run.exitCode == 0, qPrintable(describe(run)));

    const QString modern = QStringLiteral(CKPT_MODERN_PYTHON);
    if (modern.isEmpty())
        QSKIP("no modern torch configured (CKPT_MODERN_PYTHON is empty): the copies are not loaded by torch");
    const QString legacyCudaSpec = QStringLiteral(
        R"({"serialized_state_dict.pt": {"lin.weight": "cuda:0", "lin.bias": "cuda:0", "head.weight": "cuda:1",)"
        R"( "tied.weight": "cuda:1", "scale": "cuda:1", "window": "cuda:1"},)"
        R"( "serialized_constants.pt": {"const": "cuda:1"}, "serialized_example_inputs.pt": {"0.0": "cpu"}})");
    const QString legacyCpuSpec = QStringLiteral(
        R"({"serialized_state_dict.pt": {"lin.weight": "cpu", "lin.bias": "cpu", "head.weight": "cpu",)"
        R"( "tied.weight": "cpu", "scale": "cpu", "window": "cpu"}, "serialized_constants.pt": {"const": "cpu"}})");
    const QString subclassCudaSpec
        = QStringLiteral(R"({"data/weights/weight_0": {"": "cuda:0", "a": "cuda:0", "b": "cuda:0"}})");
    const QString subclassCpuSpec
        = QStringLiteral(R"({"data/weights/weight_0": {"": "cpu", "a": "cpu", "b": "cpu"}})");
    const CommandResult judged = runProgram(modern,
        {fixture(QStringLiteral("check_nested.py")), legacy, legacyCuda, legacyCudaSpec, legacy, legacyBack,
            legacyCpuSpec, subclass, subclassCuda, subclassCudaSpec, subclass, subclassBack, subclassCpuSpec},
        300'000);
    QVERIFY2(judged.exitCode == 0 && judged.out.count("ok ") == 4, qPrintable(describe(judged)));
}

// An AOTInductor package's own weights (torch.save files named by its weights_config.json) are placed
// by its compiled loader, not by what they record: they are listed, and a plan moving them refused,
// naming them.
void TestPt2::aotInductorWeightIsNotMoved()
{
    const QString input = fixture(QStringLiteral("aoti_weights.pt2"));
    const JsonValue info = infoJson(input);
    QVERIFY(hasCode(info, "export-compiled-code"));
    // Each record as torch.load reads it (aoti_weights.expected.json).
    QFile expectedFile(fixture(QStringLiteral("aoti_weights.expected.json")));
    QVERIFY(expectedFile.open(QIODevice::ReadOnly));
    const JsonValue truth = parse(expectedFile.readAll());
    QCOMPARE(truth.member("tensors").size(), std::size_t {2});
    for (const JsonValue& row : truth.member("tensors").items()) {
        const std::string name = "weights/" + row.member("record").toString();
        const JsonValue* tensor = tensorNamed(info, name);
        QVERIFY2(tensor, name.c_str());
        for (const char* field : {"dtype", "shape", "stride", "storage_offset", "device"})
            QVERIFY2(tensor->member(field) == row.member(field), (name + " " + field).c_str());
    }
    const CommandResult refused = runInspect({QStringLiteral("remap"), input, QStringLiteral("-o"),
        m_dir.filePath(QStringLiteral("aoti-weights.pt2")), QStringLiteral("--map"),
        QStringLiteral("cpu=cuda:0"), QStringLiteral("--allow-dangerous")});
    QCOMPARE(refused.exitCode, 2);
    QVERIFY2(refused.err.contains("AOTInductor weight"), qPrintable(describe(refused)));
    const CommandResult kept = runInspect({QStringLiteral("remap"), input, QStringLiteral("-o"),
        m_dir.filePath(QStringLiteral("aoti-weights-same.pt2")), QStringLiteral("--map"),
        QStringLiteral("cpu=cpu"), QStringLiteral("--allow-dangerous")});
    QVERIFY2(kept.exitCode == 0, qPrintable(describe(kept)));
}

// The 2.1-2.5 layout with its nested state dict's pickle damaged (its protocol opcode overwritten):
// the other members are still listed, the damage is an error naming the nested file, and a remap is
// refused (exit 2) rather than carrying it.
void TestPt2::damagedNestedFileIsNotRewritten()
{
    QFile whole(fixture(QStringLiteral("legacy_2_5.pt2")));
    QVERIFY(whole.open(QIODevice::ReadOnly));
    QByteArray bytes = whole.readAll();
    const qsizetype member = bytes.indexOf("serialized_state_dict.pt");
    QVERIFY(member > 0);
    const qsizetype pickle = bytes.indexOf(QByteArray("\x80\x02", 2), member);
    QVERIFY(pickle > member);
    bytes[pickle] = '\xff';
    const QString damaged = m_dir.filePath(QStringLiteral("damaged-legacy.pt2"));
    QFile out(damaged);
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(bytes);
    out.close();
    const JsonValue info = infoJson(damaged);
    QCOMPARE(QString::fromStdString(info.member("format").toString()), QStringLiteral("torch-export"));
    QVERIFY(tensorNamed(info, "constants.const"));
    bool named = false;
    for (const JsonValue& finding : info.member("findings").items())
        named = named
            || (finding.member("severity").toString() == "error"
                && finding.member("message").toString().find("serialized_state_dict.pt")
                    != std::string::npos);
    QVERIFY2(named, info.member("findings").toJson().c_str());
    // Its pickle cannot be verified (exit 4); with the override, the damage itself refuses it (exit 2).
    CommandResult remap = runInspect({QStringLiteral("remap"), damaged, QStringLiteral("-o"),
        m_dir.filePath(QStringLiteral("damaged-copy.pt2")), QStringLiteral("--map"),
        QStringLiteral("cpu=cuda:0")});
    QVERIFY2(remap.exitCode == 4, qPrintable(describe(remap)));
    remap = runInspect({QStringLiteral("remap"), damaged, QStringLiteral("-o"),
        m_dir.filePath(QStringLiteral("damaged-copy.pt2")), QStringLiteral("--map"),
        QStringLiteral("cpu=cuda:0"), QStringLiteral("--allow-dangerous")});
    QVERIFY2(
        remap.exitCode == 2 && remap.err.contains("serialized_state_dict.pt"), qPrintable(describe(remap)));
    QVERIFY(!QFile::exists(m_dir.filePath(QStringLiteral("damaged-copy.pt2"))));
}

QTEST_GUILESS_MAIN(TestPt2)
#include "tst_pt2.moc"
