// SPDX-License-Identifier: MIT
// Quantized weights with their scales (issue 29) through the real binary: `info --json` lists every
// weight of the fixtures (tests/fixtures/quant, written by safetensors 0.8 and torch 2.14) with
// exactly the scales and layouts the file was built with, and each broken variant gets its finding
// (exit 1, a warning); `info` says the groups in text; `extract --select` and `convert --select` of a
// quantized weight take its scales along, and the copies, loaded by the real readers, hold exactly
// the weight and its scales, bit for bit.
#include "fixturecomparison.h"

#include <QDir>
#include <QTemporaryDir>

#include <map>
#include <set>

namespace {

QString quantFixture(const QString& name)
{
    return fixturesDir() + u"/quant/"_qs + name;
}

const QString kChecker = QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/quant/generate_quant.py");

} // namespace

class TestQuant : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;

private Q_SLOTS:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    void infoShowsEveryGroup_data()
    {
        QTest::addColumn<QString>("fixture");
        const QStringList files
            = QDir(fixturesDir() + u"/quant"_qs).entryList({u"*.safetensors"_qs, u"*.pt"_qs});
        QVERIFY(files.size() >= 12);
        for (const QString& file : files)
            QTest::newRow(qPrintable(file)) << file;
    }
    void infoShowsEveryGroup()
    {
        QFETCH(QString, fixture);
        const JsonValue expected
            = parse(ckpt::testing::readAll(quantFixture(fixture) + u".expected.json"_qs));
        const CommandResult result = runInspect({u"info"_qs, u"--json"_qs, quantFixture(fixture)});
        const bool broken = !expected.member("findings").items().empty();
        QVERIFY2(result.exitCode == (broken ? 1 : 0), qPrintable(describe(result)));
        const JsonValue info = parse(result.out);

        std::map<std::string, std::map<std::string, std::string>> shown;
        for (const JsonValue& group : info.member("quant_groups").items()) {
            auto& scales = shown[group.member("weight").toString()];
            for (const JsonValue& scale : group.member("scales").items())
                scales[scale.member("name").toString()] = scale.member("layout").toString();
        }
        std::map<std::string, std::map<std::string, std::string>> built;
        for (const auto& [weight, scales] : expected.member("groups").members()) {
            auto& out = built[weight];
            for (const auto& [scale, layout] : scales.members())
                out[scale] = layout.toString();
        }
        QCOMPARE(show(info.member("quant_groups")).isEmpty(), false);
        QVERIFY2(shown == built, qPrintable(show(info.member("quant_groups"))));

        std::set<std::string> codes;
        for (const JsonValue& finding : info.member("findings").items())
            if (finding.member("code").toString().starts_with("quant-scale-"))
                codes.insert(finding.member("code").toString());
        std::set<std::string> wanted;
        for (const JsonValue& code : expected.member("findings").items())
            wanted.insert(code.toString());
        QVERIFY2(codes == wanted, qPrintable(show(info.member("findings"))));

        // The text says the same groups.
        const CommandResult text = runInspect({u"info"_qs, quantFixture(fixture)});
        QVERIFY(text.out.contains("Quantized weights and their scales"));
        for (const auto& [weight, scales] : built)
            for (const auto& [scale, layout] : scales)
                QVERIFY2(text.out.contains(QByteArray::fromStdString(scale)), scale.c_str());
    }

    // A folder of shards (huggingface_hub's save_torch_state_dict) whose q_proj weight and scale lie
    // in different shards: one group, no finding; `convert --select` of the folder takes the scale
    // from its own shard.
    void shardedSetKeepsGroupsAcrossShards()
    {
        const QString folder = quantFixture(u"deepseek-v3-fp8-sharded"_qs);
        const JsonValue expected
            = parse(ckpt::testing::readAll(quantFixture(u"deepseek-v3-fp8-sharded.expected.json"_qs)));
        const CommandResult result = runInspect({u"info"_qs, u"--json"_qs, folder});
        QVERIFY2(result.exitCode == 0, qPrintable(describe(result)));
        const JsonValue info = parse(result.out);
        std::map<std::string, std::map<std::string, std::string>> shown;
        for (const JsonValue& group : info.member("quant_groups").items()) {
            auto& scales = shown[group.member("weight").toString()];
            for (const JsonValue& scale : group.member("scales").items())
                scales[scale.member("name").toString()] = scale.member("layout").toString();
        }
        std::map<std::string, std::map<std::string, std::string>> built;
        for (const auto& [weight, scales] : expected.member("groups").members())
            for (const auto& [scale, layout] : scales.members())
                built[weight][scale] = layout.toString();
        QVERIFY2(shown == built, qPrintable(show(info.member("quant_groups"))));
        for (const JsonValue& finding : info.member("findings").items())
            QVERIFY2(
                !finding.member("code").toString().starts_with("quant-scale-"), qPrintable(show(finding)));

        const QString modern = QStringLiteral(CKPT_MODERN_PYTHON);
        if (modern.isEmpty())
            QSKIP("no modern torch (CKPT_MODERN_PYTHON) to load the copy");
        const QString q = u"model.layers.0.self_attn.q_proj.weight"_qs;
        const QString copy = m_dir.filePath(u"sharded-q.safetensors"_qs);
        const CommandResult convert = runInspect({u"convert"_qs, folder, u"--select"_qs, q, u"-o"_qs, copy});
        QVERIFY2(convert.exitCode == 0, qPrintable(describe(convert)));
        const CommandResult check = ckpt::testing::runProgram(
            modern, {kChecker, u"check"_qs, folder, copy, q + u","_qs + q + u"_scale_inv"_qs}, 300'000);
        QVERIFY2(check.exitCode == 0, qPrintable(describe(check)));
    }

    // A quantized weight selected alone takes its scales along, through both commands.
    void selectTakesScalesAlong()
    {
        const QString modern = QStringLiteral(CKPT_MODERN_PYTHON);
        if (modern.isEmpty())
            QSKIP("no modern torch (CKPT_MODERN_PYTHON) to load the copies");
        const QString deepseek = quantFixture(u"deepseek-v3-fp8.safetensors"_qs);
        const QString q = u"model.layers.0.self_attn.q_proj.weight"_qs;
        const QString extracted = m_dir.filePath(u"q.pt"_qs);
        const QString converted = m_dir.filePath(u"q.safetensors"_qs);
        const QString nvfp4 = quantFixture(u"nvfp4-modelopt.safetensors"_qs);
        const QString gate = m_dir.filePath(u"gate.safetensors"_qs);
        for (const QStringList& arguments :
            {QStringList {u"extract"_qs, deepseek, u"--select"_qs, q, u"-o"_qs, extracted},
                QStringList {u"convert"_qs, deepseek, u"--select"_qs, q, u"-o"_qs, converted}}) {
            const CommandResult result = runInspect(arguments);
            QVERIFY2(result.exitCode == 0, qPrintable(describe(result)));
        }
        const CommandResult module = runInspect(
            {u"convert"_qs, nvfp4, u"--select"_qs, u"layers.0.gate_proj.weight"_qs, u"-o"_qs, gate});
        QVERIFY2(module.exitCode == 0, qPrintable(describe(module)));
        const QString both = q + u","_qs + q + u"_scale_inv"_qs;
        const CommandResult check = ckpt::testing::runProgram(
            modern, {kChecker, u"check"_qs, deepseek, extracted, both, converted, both}, 300'000);
        QVERIFY2(check.exitCode == 0, qPrintable(describe(check)));
        const QString g = u"layers.0.gate_proj."_qs;
        const CommandResult checkNvfp4 = ckpt::testing::runProgram(modern,
            {kChecker, u"check"_qs, nvfp4, gate,
                g + u"weight,"_qs + g + u"weight_scale,"_qs + g + u"weight_scale_2,"_qs + g
                    + u"input_scale"_qs},
            300'000);
        QVERIFY2(checkNvfp4.exitCode == 0, qPrintable(describe(checkNvfp4)));
    }
};

QTEST_GUILESS_MAIN(TestQuant)
#include "tst_quant.moc"
