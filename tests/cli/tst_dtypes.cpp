// SPDX-License-Identifier: MIT
// The newer dtypes (issue 26, docs/dtypes.md) through the real binary: `info --json` shows torch's
// dtype and shape (float4_e2m1fn_x2 with the last dimension of safetensors' F4 halved), byte sizes
// and the torch release each dtype needs, exactly as the real readers (safetensors 0.8 and torch
// 2.14, tests/fixtures/dtypes/*.expected.json) load them; `convert` between safetensors and torch
// zips keeps every tensor bit for bit, judged by those readers; the torch 1.13 load simulation says
// what Debian's torch 1.13 prints.
#include "fixturecomparison.h"

#include <QFileInfo>
#include <QTemporaryDir>

#include <map>

namespace {

QString dtypesFixture(const char* name)
{
    return fixturesDir() + u"/dtypes/"_qs + QString::fromLatin1(name);
}

const QString kChecker = QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/dtypes/generate_dtypes.py");

struct Shown {
    QString dtype;
    QString shape;
    std::uint64_t nbytes = 0;
};

// info --json's tensors by name: dtype, shape as JSON text, and their storage's bytes.
std::map<QString, Shown> shownTensors(const JsonValue& info)
{
    std::map<QString, std::uint64_t> storageBytes;
    for (const JsonValue& storage : info.member("storages").items())
        storageBytes[QString::fromStdString(storage.member("key").toString())]
            = std::uint64_t(storage.member("nbytes").toInt64().value_or(-1));
    std::map<QString, Shown> shown;
    for (const JsonValue& tensor : info.member("tensors").items())
        shown[QString::fromStdString(tensor.member("name").toString())]
            = {QString::fromStdString(tensor.member("dtype").toString()), show(tensor.member("shape")),
                storageBytes[QString::fromStdString(tensor.member("storage").toString())]};
    return shown;
}

} // namespace

class TestDtypes : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;

    static QString modern() { return QStringLiteral(CKPT_MODERN_PYTHON); }

private Q_SLOTS:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    void infoShowsWhatTheRealReaderLoads_data()
    {
        QTest::addColumn<QString>("checkpoint");
        QTest::newRow("safetensors 0.8") << dtypesFixture("newdtypes.safetensors");
        QTest::newRow("torch 2.14 zip") << dtypesFixture("newdtypes.pt");
    }
    void infoShowsWhatTheRealReaderLoads()
    {
        QFETCH(QString, checkpoint);
        QFile file(checkpoint + u".expected.json"_qs);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const JsonValue truth = parse(file.readAll());
        const CommandResult result
            = runInspect({QStringLiteral("info"), QStringLiteral("--json"), checkpoint});
        QVERIFY2(result.exitCode == 0, qPrintable(describe(result)));
        const JsonValue info = parse(result.out);
        const std::map<QString, Shown> shown = shownTensors(info);
        QCOMPARE(shown.size(), truth.member("tensors").items().size());
        for (const JsonValue& expected : truth.member("tensors").items()) {
            const QString name = QString::fromStdString(expected.member("name").toString());
            const auto it = shown.find(name);
            QVERIFY2(it != shown.end(), qPrintable(name));
            QCOMPARE(it->second.dtype, QString::fromStdString(expected.member("dtype").toString()));
            QCOMPARE(it->second.shape, show(expected.member("shape")));
            QCOMPARE(it->second.nbytes, std::uint64_t(*expected.member("nbytes").toInt64()));
        }
        // No tensor is left without its bytes or a torch dtype.
        for (const JsonValue& finding : info.member("findings").items())
            QVERIFY2(finding.member("code").toString() != "dtype-without-torch-equivalent",
                finding.member("message").toString().c_str());
        // The releases that first read them (docs/dtypes.md), one finding per dtype.
        std::map<std::string, std::string> needs;
        for (const JsonValue& finding : info.member("findings").items())
            if (finding.member("code").toString() == "dtype-needs-newer-torch") {
                const std::string& message = finding.member("message").toString();
                const auto at = message.find(" needs torch >= ");
                QVERIFY2(at != std::string::npos, message.c_str());
                const auto start = message.rfind("): ", at);
                needs[message.substr(start + 3, at - start - 3)] = message.substr(at + 16, 3);
            }
        const bool zip = checkpoint.endsWith(u".pt"_qs);
        QCOMPARE(needs["float4_e2m1fn_x2"], std::string("2.8"));
        QCOMPARE(needs["float8_e8m0fnu"], std::string("2.7"));
        QCOMPARE(needs["uint16"], std::string("2.3"));
        // float8_e4m3fn is torch 2.1's, but a torch.save file of it needs _rebuild_tensor_v3 (2.2).
        QCOMPARE(needs["float8_e4m3fn"], std::string(zip ? "2.2" : "2.1"));
        QCOMPARE(needs.count("float32"), std::size_t(0));
        QCOMPARE(needs.count("complex64"), std::size_t(0));
        if (zip)
            QCOMPARE(needs["complex32"], std::string("2.2"));
    }

    void convertRoundTripsBitForBit()
    {
        if (modern().isEmpty())
            QSKIP("the modern-torch root is not available");
        const QString safetensors = dtypesFixture("newdtypes.safetensors");
        const QString zip = dtypesFixture("newdtypes.pt");
        const QString toTorch = m_dir.filePath(QStringLiteral("from-safetensors.pt"));
        const QString toSafetensors = m_dir.filePath(QStringLiteral("from-zip.safetensors"));
        const QString backToTorch = m_dir.filePath(QStringLiteral("back.pt"));
        const QString backToSafetensors = m_dir.filePath(QStringLiteral("back.safetensors"));

        CommandResult converted
            = runInspect({QStringLiteral("convert"), safetensors, QStringLiteral("-o"), toTorch});
        QVERIFY2(
            converted.exitCode == 0 && converted.out.contains("verified"), qPrintable(describe(converted)));
        QVERIFY2(!converted.out.contains("not written"), qPrintable(describe(converted)));
        // complex32 and complex128 have no safetensors name: refused and named, then left out.
        converted = runInspect({QStringLiteral("convert"), zip, QStringLiteral("-o"), toSafetensors});
        QCOMPARE(converted.exitCode, 2);
        QVERIFY2(converted.err.contains("complex.c32 (complex32)") && converted.err.contains("complex128"),
            qPrintable(describe(converted)));
        converted = runInspect(
            {QStringLiteral("convert"), zip, QStringLiteral("-o"), toSafetensors, QStringLiteral("--select"),
                QStringLiteral("mx"), QStringLiteral("--select"), QStringLiteral("fp8"),
                QStringLiteral("--select"), QStringLiteral("uint"), QStringLiteral("--select"),
                QStringLiteral("complex.c64"), QStringLiteral("--select"), QStringLiteral("plain")});
        QVERIFY2(
            converted.exitCode == 0 && converted.out.contains("verified"), qPrintable(describe(converted)));
        converted = runInspect({QStringLiteral("convert"), toSafetensors, QStringLiteral("-o"), backToTorch});
        QVERIFY2(converted.exitCode == 0, qPrintable(describe(converted)));
        converted = runInspect({QStringLiteral("convert"), toTorch, QStringLiteral("-o"), backToSafetensors});
        QVERIFY2(converted.exitCode == 0, qPrintable(describe(converted)));

        // F4 is written as safetensors writes it: the last dimension counts 4-bit values.
        const CommandResult header
            = runInspect({QStringLiteral("info"), QStringLiteral("--json"), toSafetensors});
        QVERIFY2(header.exitCode == 0, qPrintable(describe(header)));
        QCOMPARE(shownTensors(parse(header.out))[u"mx.blocks"_qs].shape, QStringLiteral("[2,3]"));
        QFile written(toSafetensors);
        QVERIFY(written.open(QIODevice::ReadOnly));
        QVERIFY2(
            written.readAll().contains(R"("mx.blocks":{"dtype":"F4","shape":[2,6])"), "F4's header shape");

        // One interpreter judges every copy with the real readers, tensor by tensor, bit for bit.
        const QString st = safetensors + u".expected.json"_qs;
        const QString pt = zip + u".expected.json"_qs;
        const CommandResult checked = runProgram(modern(),
            {kChecker, QStringLiteral("check"), st, toTorch, pt, toSafetensors, pt, backToTorch, st,
                backToSafetensors});
        QVERIFY2(checked.exitCode == 0, qPrintable(describe(checked)));
        QCOMPARE(checked.out.count("ok: "), 4);
        QVERIFY2(checked.out.contains("ok: 11 tensors identical"), qPrintable(describe(checked)));
    }

    void remapKeepsThemBitForBit()
    {
        if (modern().isEmpty())
            QSKIP("the modern-torch root is not available");
        const QString zip = dtypesFixture("newdtypes.pt");
        const QString remapped = m_dir.filePath(QStringLiteral("remapped.pt"));
        const CommandResult result = runInspect({QStringLiteral("remap"), zip, QStringLiteral("-o"), remapped,
            QStringLiteral("--map"), QStringLiteral("cpu=cuda:1")});
        QVERIFY2(result.exitCode == 0 && result.out.contains("verified"), qPrintable(describe(result)));
        const CommandResult checked
            = runProgram(modern(), {kChecker, QStringLiteral("check"), zip + u".expected.json"_qs, remapped});
        QVERIFY2(checked.exitCode == 0, qPrintable(describe(checked)));
        QVERIFY2(checked.out.contains("ok: 13 tensors identical; recorded on cuda:1\n"),
            qPrintable(describe(checked)));
    }

    void valueScanDecodesOrSaysWhy()
    {
        // Figures as torch 2.14 computes them (tensor.to(torch.float64).min()/max()/mean()); float4
        // has no arithmetic in torch either ("copy_" not implemented for 'Float4_e2m1fn_x2').
        const CommandResult result = runInspect(
            {QStringLiteral("check"), QStringLiteral("--values"), dtypesFixture("newdtypes.pt")});
        const QString text = QString::fromUtf8(result.out);
        for (const QString& line :
            {u"mx.blocks: values of dtype float4_e2m1fn_x2 have no arithmetic meaning"_qs,
                u"min 9.53674e-07  max 2  mean 0.875"_qs, u"min -2  max 448  mean 89.5"_qs,
                u"min -2  max 57344  mean 14335.9"_qs, u"min -2  max 240  mean 79.6667"_qs,
                u"min 0  max 65535  mean 21845.3"_qs, u"min 1  max 1.84467e+19  mean 9.22337e+18"_qs,
                u"min 2.23607  max 3.5  mean 2.86803"_qs})
            QVERIFY2(text.contains(line), qPrintable(line + u"\n"_qs + text));
        QVERIFY2(text.contains(u"13 tensors scanned, 0 hold NaN or infinities, 1 could not be read"_qs),
            qPrintable(text));
    }

    void torch113SimulationSaysWhatTorch113Prints()
    {
        const QString zip = dtypesFixture("newdtypes.pt");
        const CommandResult result = runInspect({QStringLiteral("check"), QStringLiteral("--json"),
            QStringLiteral("--torch"), QStringLiteral("1.13"), zip});
        const QString text = QString::fromUtf8(result.out);
        QVERIFY2(
            text.contains(
                u"Can't get attribute '_rebuild_tensor_v3' on <module 'torch._utils' from '<site-packages>/torch/_utils.py'>"_qs),
            qPrintable(text.left(4000)));
        // Debian's torch 1.13 itself.
        const CommandResult real = runProgram(QStringLiteral(CKPT_LEGACY_PYTHON),
            {QStringLiteral("-c"),
                QStringLiteral("import sys, torch\n"
                               "try:\n    torch.load(sys.argv[1], weights_only=False)\n"
                               "except AttributeError as e:\n    print(e)\n"),
                zip});
        QVERIFY2(real.exitCode == 0, qPrintable(describe(real)));
        QString printed = QString::fromUtf8(real.out).trimmed();
        const qsizetype from = printed.indexOf(u" from '"_qs);
        QVERIFY2(from > 0, qPrintable(printed));
        printed = printed.left(from) + u" from '<site-packages>/torch/_utils.py'>"_qs;
        QVERIFY2(text.contains(printed), qPrintable(printed));
    }

    void safetensorsF4WithAnOddLastDimensionIsNamed()
    {
        // safetensors.torch refuses it (checked with safetensors 0.8); the inspector lists it as F4.
        const QByteArray header = R"({"t":{"dtype":"F4","shape":[2,3],"data_offsets":[0,3]}})";
        QByteArray bytes(8, '\0');
        qint64 size = header.size();
        for (int i = 0; i < 8; ++i)
            bytes[i] = char((size >> (8 * i)) & 0xFF);
        bytes += header + QByteArray("\x12\x34\x56", 3);
        const QString path = m_dir.filePath(QStringLiteral("odd.safetensors"));
        QVERIFY(ckpt::testing::writeAll(path, bytes));
        const CommandResult result = runInspect({QStringLiteral("info"), QStringLiteral("--json"), path});
        const JsonValue info = parse(result.out);
        const std::map<QString, Shown> shown = shownTensors(info);
        QCOMPARE(shown.at(u"t"_qs).dtype, QStringLiteral("f4"));
        QCOMPARE(shown.at(u"t"_qs).shape, QStringLiteral("[2,3]"));
        QVERIFY2(result.out.contains(
                     "f4_x2 dtype requires that the last dim be divisible by 2 in torch: got [2, 3]"),
            result.out.constData());
    }
};

QTEST_GUILESS_MAIN(TestDtypes)
#include "tst_dtypes.moc"
