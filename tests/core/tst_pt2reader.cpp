// SPDX-License-Identifier: MIT
// The torch.export archive reader (core/read/pt2reader.h) against archives written by torch 2.14's
// torch.export.save (tests/fixtures/torch-export/, generate.py), each compared with what
// torch.export.load reads from it (the .expected.json beside it): every weight and constant with
// its dtype, shape, stride, storage offset and recorded device, the sample inputs from the nested
// torch.save file, the torch 2.1-2.5 layout, the AOTInductor package rated as code. And damaged
// copies: cut short at every point and with a config corrupted, nothing crashes, every problem is
// a finding, and what is intact is still listed.
#include "core/io/mappedfile.h"
#include "core/model/checkpoint.h"
#include "core/model/formatcapabilities.h"
#include "core/read/checkpointreader.h"
#include "core/safety/pickleverdict.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

#include <algorithm>

using namespace ckpt;

namespace {

const QString kDir = QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/torch-export/");

QByteArray fileBytes(const QString& name)
{
    QFile file(kDir + name);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    return file.readAll();
}

Checkpoint readBytes(const QByteArray& bytes)
{
    return readCheckpoint(MappedFile::fromBuffer(ByteBuffer(bytes.begin(), bytes.end()), "sample.pt2"));
}

const TensorEntry* tensorNamed(const Checkpoint& checkpoint, const std::string& name)
{
    for (const TensorEntry& tensor : checkpoint.tensors)
        if (tensor.name == name)
            return &tensor;
    return nullptr;
}

bool hasFinding(const Checkpoint& checkpoint, FindingCode code)
{
    return std::any_of(checkpoint.findings.begin(), checkpoint.findings.end(),
        [&](const Finding& finding) { return finding.code == code; });
}

QJsonArray dims(const Dimensions& values)
{
    QJsonArray array;
    for (std::int64_t value : values)
        array.append(static_cast<qint64>(value));
    return array;
}

} // namespace

class TestPt2Reader : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void agreesWithTorchExportLoad_data();
    void agreesWithTorchExportLoad();
    void sharedRecordIsOneStorage();
    void aotInductorIsCode();
    void legacyLayoutIsNotRemapped();
    void usePickleWeightIsANestedArchive();
    void truncatedAtEveryPoint();
    void corruptConfig();
    void capabilityRow();
};

void TestPt2Reader::agreesWithTorchExportLoad_data()
{
    QTest::addColumn<QString>("fixture");
    QTest::addColumn<QString>("expected");
    QTest::newRow("pt2") << QStringLiteral("small.pt2") << QStringLiteral("small.expected.json");
    QTest::newRow("torch 2.1-2.5 layout")
        << QStringLiteral("legacy_2_5.pt2") << QStringLiteral("legacy_2_5.expected.json");
    // Recorded on cuda:0 and cuda:1: the devices torch.export.load moves each record to.
    QTest::newRow("recorded on cuda")
        << QStringLiteral("cuda_faked.pt2") << QStringLiteral("cuda_faked.expected.json");
    // torch.export.load refuses the stub's shared library; its weights are small.pt2's.
    QTest::newRow("aoti package") << QStringLiteral("aoti_stub.pt2") << QStringLiteral("small.expected.json");
}

void TestPt2Reader::agreesWithTorchExportLoad()
{
    QFETCH(QString, fixture);
    QFETCH(QString, expected);
    const QJsonObject want = QJsonDocument::fromJson(fileBytes(expected)).object();
    QVERIFY(!want.isEmpty());
    const Checkpoint checkpoint = readBytes(fileBytes(fixture));
    QCOMPARE(checkpoint.format, CheckpointFormat::ExportArchive);
    for (const Finding& finding : checkpoint.findings)
        QVERIFY2(finding.severity != Severity::Error, finding.message.c_str());

    std::size_t seen = 0;
    for (const QString& list : {QStringLiteral("tensors"), QStringLiteral("sample_inputs")}) {
        for (const auto& value : want.value(list).toArray()) {
            const QJsonObject row = value.toObject();
            const QString kind = row.value(QStringLiteral("kind")).toString();
            const QString prefix = kind == QStringLiteral("state_dict") ? QStringLiteral("state_dict.")
                : kind == QStringLiteral("constant")                    ? QStringLiteral("constants.")
                                                                        : QStringLiteral("sample_inputs.0.");
            const std::string name
                = QString(prefix + row.value(QStringLiteral("name")).toString()).toStdString();
            const TensorEntry* tensor = tensorNamed(checkpoint, name);
            QVERIFY2(tensor, name.c_str());
            ++seen;
            QCOMPARE(QString::fromStdString(std::string(tensor->dtype)),
                row.value(QStringLiteral("dtype")).toString());
            QCOMPARE(dims(tensor->shape), row.value(QStringLiteral("shape")).toArray());
            QVERIFY(tensor->stride);
            QCOMPARE(dims(Dimensions(*tensor->stride)), row.value(QStringLiteral("stride")).toArray());
            QCOMPARE(
                tensor->storageOffset.value_or(-1), row.value(QStringLiteral("storage_offset")).toInteger());
            QVERIFY(tensor->device);
            QCOMPARE(QString::fromStdString(std::string(*tensor->device)),
                row.value(QStringLiteral("device")).toString());
            QVERIFY(tensor->storage >= 0);
            const StorageRecord& storage = checkpoint.storages[static_cast<std::size_t>(tensor->storage)];
            QCOMPARE(
                static_cast<qint64>(storage.nbytes), row.value(QStringLiteral("storage_bytes")).toInteger());
            QVERIFY(storage.bytesComplete());
            if (kind != QStringLiteral("sample_input")) {
                QCOMPARE(tensor->isParameter, row.value(QStringLiteral("is_parameter")).toBool());
                QCOMPARE(tensor->requiresGrad, row.value(QStringLiteral("requires_grad")).toBool());
            }
        }
    }
    QCOMPARE(checkpoint.tensors.size(), seen);
}

void TestPt2Reader::sharedRecordIsOneStorage()
{
    const Checkpoint checkpoint = readBytes(fileBytes(QStringLiteral("small.pt2")));
    const TensorEntry* head = tensorNamed(checkpoint, "state_dict.head.weight");
    const TensorEntry* tied = tensorNamed(checkpoint, "state_dict.tied.weight");
    QVERIFY(head && tied);
    QCOMPARE(head->storage, tied->storage);
    const StorageRecord& storage = checkpoint.storages[static_cast<std::size_t>(head->storage)];
    QCOMPARE(storage.record(), std::string("small/data/weights/weight_2"));
    // The bytes are where the zip says: the first float of head.weight lies at dataOffset.
    QVERIFY(storage.dataOffset && *storage.dataOffset % 64 == 0);
}

void TestPt2Reader::aotInductorIsCode()
{
    const QByteArray bytes = fileBytes(QStringLiteral("aoti_stub.pt2"));
    const Checkpoint checkpoint = readBytes(bytes);
    QVERIFY(hasFinding(checkpoint, FindingCode::ExportCompiledCode));
    const SafetyVerdict verdict = ratePickleSafety(ByteView(
        reinterpret_cast<const std::uint8_t*>(bytes.constData()), static_cast<std::size_t>(bytes.size())));
    QCOMPARE(verdict.rating, PickleSafety::DangerousOrUnknown);
    QVERIFY(std::any_of(verdict.unsafe.begin(), verdict.unsafe.end(), [](const UnsafeCallable& callable) {
        return callable.name.find("model.wrapper.so") != std::string::npos;
    }));
    // Without the compiled members the same program is inert (every nested pickle rated).
    const QByteArray plain = fileBytes(QStringLiteral("small.pt2"));
    const SafetyVerdict inert = ratePickleSafety(ByteView(
        reinterpret_cast<const std::uint8_t*>(plain.constData()), static_cast<std::size_t>(plain.size())));
    QCOMPARE(inert.rating, PickleSafety::KnownInert);
    QVERIFY(std::any_of(inert.pickles.begin(), inert.pickles.end(),
        [](const std::string& label) { return label.find("sample_inputs/model.pt") != std::string::npos; }));
}

void TestPt2Reader::legacyLayoutIsNotRemapped()
{
    const Checkpoint checkpoint = readBytes(fileBytes(QStringLiteral("legacy_2_5.pt2")));
    QVERIFY(hasFinding(checkpoint, FindingCode::ExportLegacyLayout));
    QCOMPARE(checkpoint.tensors.size(), std::size_t {8});
}

// A tensor subclass (torch's TwoTensor) is stored with use_pickle: its record is a torch.save file,
// read as a nested archive and shown at its name; its class is not inert (torch.export.load reads
// it with weights_only=False), and the verdict says so.
void TestPt2Reader::usePickleWeightIsANestedArchive()
{
    const QByteArray bytes = fileBytes(QStringLiteral("subclass.pt2"));
    const Checkpoint checkpoint = readBytes(bytes);
    QCOMPARE(checkpoint.format, CheckpointFormat::ExportArchive);
    const QJsonObject want
        = QJsonDocument::fromJson(fileBytes(QStringLiteral("subclass.expected.json"))).object();
    const QJsonObject pair = want.value(QStringLiteral("tensors")).toArray().at(0).toObject();
    QCOMPARE(pair.value(QStringLiteral("name")).toString(), QStringLiteral("pair"));
    const TensorEntry* tensor = tensorNamed(checkpoint, "state_dict.pair");
    QVERIFY(tensor);
    QCOMPARE(std::string(tensor->subclass), pair.value(QStringLiteral("type")).toString().toStdString());
    QCOMPARE(
        QString::fromStdString(std::string(tensor->dtype)), pair.value(QStringLiteral("dtype")).toString());
    QCOMPARE(dims(tensor->shape), pair.value(QStringLiteral("shape")).toArray());
    QVERIFY(tensor->device);
    QCOMPARE(QString::fromStdString(std::string(*tensor->device)),
        pair.value(QStringLiteral("device")).toString());
    QVERIFY(tensorNamed(checkpoint, "state_dict.lin.weight"));
    const SafetyVerdict verdict = ratePickleSafety(ByteView(
        reinterpret_cast<const std::uint8_t*>(bytes.constData()), static_cast<std::size_t>(bytes.size())));
    QCOMPARE(verdict.rating, PickleSafety::DangerousOrUnknown);
    QVERIFY(std::any_of(verdict.unsafe.begin(), verdict.unsafe.end(), [](const UnsafeCallable& callable) {
        return callable.name == "torch.testing._internal.two_tensor.TwoTensor"
            && callable.where.find("data/weights/weight_0") != std::string::npos;
    }));
}

void TestPt2Reader::truncatedAtEveryPoint()
{
    const QByteArray whole = fileBytes(QStringLiteral("small.pt2"));
    QVERIFY(!whole.isEmpty());
    for (qsizetype cut = 0; cut < whole.size(); cut += 97) {
        const Checkpoint checkpoint = readBytes(whole.left(cut));
        for (const TensorEntry& tensor : checkpoint.tensors)
            if (tensor.storage >= 0)
                QVERIFY(static_cast<std::size_t>(tensor.storage) < checkpoint.storages.size());
        if (checkpoint.format == CheckpointFormat::ExportArchive && cut < whole.size()) {
            // The central directory is gone: the records before the cut are still read.
            QVERIFY2(
                checkpoint.hasErrors() || !checkpoint.findings.empty(), qPrintable(QString::number(cut)));
        }
    }
    // Cut inside the last weight record: the weights before it are listed, the cut one is named.
    const Checkpoint cut = readBytes(whole.left(1000));
    QCOMPARE(cut.format, CheckpointFormat::ExportArchive);
    QVERIFY(cut.hasErrors());
}

void TestPt2Reader::corruptConfig()
{
    QByteArray bytes = fileBytes(QStringLiteral("small.pt2"));
    // Same length, so the zip stays consistent: the config's first quote becomes a brace.
    const qsizetype at = bytes.indexOf("{\"config\": {\"lin.weight\"");
    QVERIFY(at > 0);
    bytes[at + 1] = '{';
    const Checkpoint checkpoint = readBytes(bytes);
    QCOMPARE(checkpoint.format, CheckpointFormat::ExportArchive);
    QVERIFY(hasFinding(checkpoint, FindingCode::ExportConfigUnreadable));
    // The constants config is intact: its tensor is still listed.
    QVERIFY(tensorNamed(checkpoint, "constants.const"));
    QVERIFY(!tensorNamed(checkpoint, "state_dict.lin.weight"));

    // A device torch cannot read, and a path_name that names no record.
    QByteArray other = fileBytes(QStringLiteral("small.pt2"));
    const qsizetype path = other.indexOf("\"path_name\": \"weight_1\"");
    QVERIFY(path > 0);
    other[path + 20] = '9'; // weight_9
    const Checkpoint missing = readBytes(other);
    QVERIFY(hasFinding(missing, FindingCode::RecordMissing));
    QVERIFY(tensorNamed(missing, "state_dict.lin.weight"));
}

void TestPt2Reader::capabilityRow()
{
    const FormatCapabilities& row = formatCapabilities(CheckpointFormat::ExportArchive);
    QCOMPARE(row.name, std::string_view("torch-export"));
    QVERIFY(row.readable && row.recordsDevices && row.pickled);
    QCOMPARE(row.copyWithPlan, CopyWithPlan::Rewritten);
    QVERIFY(!row.torchLoadSimulated);
}

QTEST_APPLESS_MAIN(TestPt2Reader)
#include "tst_pt2reader.moc"
