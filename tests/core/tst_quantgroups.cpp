// SPDX-License-Identifier: MIT
// Quantized weights grouped with their scales (issue 29, core/model/quantgroups.h) against the
// fixtures of tests/fixtures/quant, written by safetensors 0.8 and torch 2.14 in the layouts the
// DeepSeek-V3, NVFP4 (ModelOpt, compressed-tensors, float4_e2m1fn_x2), FP8 per-tensor/per-channel
// and GPTQ producers use: the reader sees each tensor as the real reader loads it, each weight is
// grouped with exactly the scales the file was built with, each layout is the one it was built
// with, and each broken variant (scale dropped, transposed, wrong block count, orphan, NVFP4 group
// of 32) gives exactly its finding. Shapes a hostile header may carry (zero, huge, one dimension)
// are grouped without a crash, and a cut-short file still says what it can.
#include "core/model/checkpoint.h"
#include "core/model/quantgroups.h"
#include "core/read/checkpointreader.h"
#include "tests/common/testfiles.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSet>
#include <QTemporaryDir>
#include <QTest>

#include <map>
#include <set>

using namespace ckpt;
using namespace ckpt::testing;

namespace {

QString quantFixture(const QString& name)
{
    return fixturePath(u"quant/"_qs + name);
}

QJsonObject expectedOf(const QString& fixture)
{
    QFile file(quantFixture(fixture) + u".expected.json"_qs);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(file.readAll()).object();
}

std::set<QString> quantCodes(const Checkpoint& checkpoint)
{
    std::set<QString> codes;
    for (const Finding& finding : checkpoint.findings)
        if (finding.code == FindingCode::QuantScaleMissing || finding.code == FindingCode::QuantScaleMismatch
            || finding.code == FindingCode::QuantScaleOrphan)
            codes.insert(QString::fromUtf8(finding.codeId().data(), qsizetype(finding.codeId().size())));
    return codes;
}

QString shapeText(const Dimensions& shape)
{
    QStringList parts;
    for (std::int64_t d : shape)
        parts << QString::number(d);
    return u"["_qs + parts.join(u", "_qs) + u"]"_qs;
}

TensorEntry tensor(std::string name, const char* dtype, Dimensions shape)
{
    TensorEntry entry;
    entry.name = std::move(name);
    entry.dtype = InternedString(dtype);
    entry.shape = std::move(shape);
    return entry;
}

} // namespace

class TestQuantGroups : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void groupsAsBuilt_data()
    {
        QTest::addColumn<QString>("fixture");
        const QStringList files = QDir(fixturePath("quant")).entryList({u"*.safetensors"_qs, u"*.pt"_qs});
        QVERIFY(files.size() >= 12);
        for (const QString& file : files)
            QTest::newRow(qPrintable(file)) << file;
    }
    void groupsAsBuilt()
    {
        QFETCH(QString, fixture);
        const QJsonObject expected = expectedOf(fixture);
        QVERIFY(!expected.isEmpty());
        const Checkpoint checkpoint = readCheckpoint(quantFixture(fixture).toStdString());
        QVERIFY(!checkpoint.hasErrors());

        // The tensors as the real reader loads them.
        std::map<QString, std::pair<QString, QString>> shown;
        for (const TensorEntry& entry : checkpoint.tensors)
            shown[QString::fromStdString(entry.name.str())]
                = {QString::fromUtf8(
                       std::string_view(entry.dtype).data(), qsizetype(std::string_view(entry.dtype).size())),
                    shapeText(entry.shape)};
        const QJsonArray tensors = expected[u"tensors"_qs].toArray();
        QCOMPARE(shown.size(), std::size_t(tensors.size()));
        for (const QJsonValue value : tensors) {
            const QJsonObject object = value.toObject();
            const QString name = object[u"name"_qs].toString();
            QVERIFY2(shown.count(name), qPrintable(name));
            QCOMPARE(shown[name].first, object[u"dtype"_qs].toString());
            QStringList dims;
            for (const QJsonValue d : object[u"shape"_qs].toArray())
                dims << QString::number(d.toInteger());
            QCOMPARE(shown[name].second, u"["_qs + dims.join(u", "_qs) + u"]"_qs);
        }

        // Every weight with exactly its scales, each with the layout the file was built with.
        const QuantScan scan = findQuantGroups(checkpoint);
        std::map<QString, std::map<QString, QString>> found;
        for (const QuantGroup& group : scan.groups) {
            auto& scales = found[QString::fromStdString(checkpoint.tensors[group.weight].name.str())];
            for (const QuantScale& scale : group.scales)
                scales[QString::fromStdString(checkpoint.tensors[scale.tensor].name.str())]
                    = QString::fromStdString(scale.layout);
        }
        std::map<QString, std::map<QString, QString>> built;
        const QJsonObject groups = expected[u"groups"_qs].toObject();
        for (auto it = groups.begin(); it != groups.end(); ++it) {
            auto& scales = built[it.key()];
            const QJsonObject object = it.value().toObject();
            for (auto s = object.begin(); s != object.end(); ++s)
                scales[s.key()] = s.value().toString();
        }
        if (found != built) {
            for (const auto& [weight, scales] : found)
                for (const auto& [scale, layout] : scales)
                    qWarning("found %s: %s %s", qPrintable(weight), qPrintable(scale), qPrintable(layout));
        }
        QVERIFY(found == built);

        // Exactly the findings the broken variant was built to have.
        std::set<QString> codes;
        for (const QJsonValue code : expected[u"findings"_qs].toArray())
            codes.insert(code.toString());
        if (quantCodes(checkpoint) != codes)
            for (const Finding& finding : checkpoint.findings)
                qWarning("%s: %s", finding.codeId().data(), finding.message.c_str());
        QVERIFY(quantCodes(checkpoint) == codes);
    }

    void logicalShapes()
    {
        const Checkpoint nvfp4 = readCheckpoint(quantFixture(u"nvfp4-modelopt.safetensors"_qs).toStdString());
        const QuantScan scan = findQuantGroups(nvfp4);
        QCOMPARE(scan.groups.size(), std::size_t(2));
        const QuantGroup& gate = scan.groups.front();
        QCOMPARE(
            QString::fromStdString(nvfp4.tensors[gate.weight].name.str()), u"layers.0.gate_proj.weight"_qs);
        QCOMPARE(QString::fromStdString(gate.scheme), u"nvfp4"_qs);
        QCOMPARE(shapeText(nvfp4.tensors[gate.weight].shape), u"[64, 64]"_qs);
        QCOMPARE(shapeText(gate.logicalShape), u"[64, 128]"_qs);
        QCOMPARE(gate.valuesPerElement, 2u);
        QCOMPARE(gate.packedDim, 1);

        const Checkpoint f4 = readCheckpoint(quantFixture(u"nvfp4-f4.safetensors"_qs).toStdString());
        const QuantScan f4Scan = findQuantGroups(f4);
        QCOMPARE(f4Scan.groups.size(), std::size_t(1));
        QCOMPARE(shapeText(f4Scan.groups.front().logicalShape), u"[32, 64]"_qs);

        const Checkpoint gptq = readCheckpoint(quantFixture(u"gptq-int4.safetensors"_qs).toStdString());
        const QuantScan gptqScan = findQuantGroups(gptq);
        QCOMPARE(gptqScan.groups.size(), std::size_t(1));
        QCOMPARE(shapeText(gptqScan.groups.front().logicalShape),
            u"[128, 64]"_qs); // [in, out], packed along dim 0
        QCOMPARE(gptqScan.groups.front().packedDim, 0);
    }

    // A message names both shapes and what would tile.
    void messagesSayWhatWouldTile()
    {
        const Checkpoint transposed
            = readCheckpoint(quantFixture(u"broken-scale-transposed.safetensors"_qs).toStdString());
        const Checkpoint count
            = readCheckpoint(quantFixture(u"broken-block-count.safetensors"_qs).toStdString());
        auto message = [](const Checkpoint& checkpoint) {
            for (const Finding& finding : checkpoint.findings)
                if (finding.code == FindingCode::QuantScaleMismatch)
                    return QString::fromStdString(finding.message);
            return QString();
        };
        QVERIFY2(message(transposed).contains(u"[3, 2]"_qs) && message(transposed).contains(u"swapped"_qs),
            qPrintable(message(transposed)));
        QVERIFY2(message(count).contains(u"need [2, 3]"_qs), qPrintable(message(count)));
    }

    // Producers without a writer in the sid root (AWQ, compressed-tensors pack-quantized, MLX,
    // gpt-oss): their published shapes, grouped and tiled by the same reasoning.
    void otherProducersShapes()
    {
        Checkpoint checkpoint;
        checkpoint.ensureRoot();
        // AWQ: qweight [in, out / 8], scales [in / 32, out], qzeros [in / 32, out / 8].
        checkpoint.tensors.push_back(tensor("awq.qweight", "int32", {128, 8}));
        checkpoint.tensors.push_back(tensor("awq.scales", "float16", {4, 64}));
        checkpoint.tensors.push_back(tensor("awq.qzeros", "int32", {4, 8}));
        // compressed-tensors pack-quantized: weight_packed [out, in / 8], weight_scale [out, in / 64],
        // weight_zero_point [out / 8, in / 64].
        checkpoint.tensors.push_back(tensor("ct.weight_packed", "int32", {64, 16}));
        checkpoint.tensors.push_back(tensor("ct.weight_scale", "bfloat16", {64, 2}));
        checkpoint.tensors.push_back(tensor("ct.weight_zero_point", "int32", {8, 2}));
        // MLX 4-bit, group 64: weight uint32 [out, in / 8], scales and biases [out, in / 64].
        checkpoint.tensors.push_back(tensor("mlx.weight", "uint32", {64, 16}));
        checkpoint.tensors.push_back(tensor("mlx.scales", "float16", {64, 2}));
        checkpoint.tensors.push_back(tensor("mlx.biases", "float16", {64, 2}));
        // gpt-oss MXFP4: [experts, out, groups, 16] bytes and [experts, out, groups] e8m0 bytes.
        checkpoint.tensors.push_back(tensor("moe.gate_up_proj_blocks", "uint8", {2, 64, 4, 16}));
        checkpoint.tensors.push_back(tensor("moe.gate_up_proj_scales", "uint8", {2, 64, 4}));
        // An attention's activation scales: neither grouped nor orphans.
        checkpoint.tensors.push_back(tensor("attn.k_scale", "float32", {}));
        checkpoint.tensors.push_back(tensor("attn.v_scale", "float32", {}));
        addQuantScaleFindings(checkpoint);
        for (const Finding& finding : checkpoint.findings)
            qWarning("%s", finding.message.c_str());
        QVERIFY(checkpoint.findings.empty());
        const QuantScan scan = findQuantGroups(checkpoint);
        std::map<QString, QString> layouts;
        std::map<QString, QString> logical;
        for (const QuantGroup& group : scan.groups) {
            logical[QString::fromStdString(checkpoint.tensors[group.weight].name.str())]
                = shapeText(group.logicalShape);
            for (const QuantScale& scale : group.scales)
                layouts[QString::fromStdString(checkpoint.tensors[scale.tensor].name.str())]
                    = QString::fromStdString(scale.layout);
        }
        const std::map<QString, QString> wantedLogical {{u"awq.qweight"_qs, u"[128, 64]"_qs},
            {u"ct.weight_packed"_qs, u"[64, 128]"_qs}, {u"mlx.weight"_qs, u"[64, 128]"_qs},
            {u"moe.gate_up_proj_blocks"_qs, u"[2, 64, 128]"_qs}};
        QVERIFY(logical == wantedLogical);
        const std::map<QString, QString> wantedLayouts {{u"awq.scales"_qs, u"group 32 along dim 0"_qs},
            {u"awq.qzeros"_qs, u"group 32 along dim 0"_qs}, {u"ct.weight_scale"_qs, u"group 64"_qs},
            {u"ct.weight_zero_point"_qs, u"group 64"_qs}, {u"mlx.scales"_qs, u"group 64"_qs},
            {u"mlx.biases"_qs, u"group 64"_qs}, {u"moe.gate_up_proj_scales"_qs, u"group 32"_qs}};
        if (layouts != wantedLayouts)
            for (const auto& [name, layout] : layouts)
                qWarning("%s: %s", qPrintable(name), qPrintable(layout));
        QVERIFY(layouts == wantedLayouts);
    }

    // The scan remembers the layouts of recent (weight, scale) shape pairs (a model repeats a few):
    // each scale's layout is the one a scan of its group alone gives, whatever came before it.
    // More pairs than it remembers, repeated in changing orders, weights of one shape with scales
    // of several and the other way round, tiling and not.
    void layoutsAlikeInAnyOrder()
    {
        const std::vector<std::pair<Dimensions, Dimensions>> pairs {{{256, 256}, {2, 2}},
            {{256, 256}, {2, 1}}, {{256, 256}, {1, 2}}, {{256, 256}, {1}}, {{256, 256}, {256}},
            {{256, 256}, {3, 2}}, {{384, 256}, {3, 2}}, {{384, 256}, {2, 3}}, {{256, 384}, {2, 3}},
            {{256, 384}, {3, 2}}, {{512, 128}, {4, 1}}, {{512, 128}, {512, 1}}, {{2, 256, 256}, {2, 2, 2}},
            {{2, 256, 256}, {2, 2}}, {{128, 7168}, {1, 56}}, {{7168, 2048}, {56, 16}},
            {{2048, 7168}, {16, 56}}, {{7168, 2048}, {16, 56}}, {{100, 100}, {1, 1}}, {{100, 100}, {7, 7}}};
        std::vector<std::size_t> order;
        for (std::size_t round = 0; round < 3; ++round)
            for (std::size_t i = 0; i < pairs.size(); ++i)
                order.push_back(round == 1 ? pairs.size() - 1 - i : (i * (round + 7)) % pairs.size());
        Checkpoint all;
        all.ensureRoot();
        std::vector<QString> alone;
        for (std::size_t k = 0; k < order.size(); ++k) {
            const auto& [weight, scale] = pairs[order[k]];
            const std::string prefix = "layers." + std::to_string(k) + ".proj";
            Checkpoint one;
            one.ensureRoot();
            for (Checkpoint* checkpoint : {&all, &one}) {
                checkpoint->tensors.push_back(tensor(prefix + ".weight", "float8_e4m3fn", weight));
                checkpoint->tensors.push_back(tensor(prefix + ".weight_scale_inv", "float32", scale));
            }
            const QuantScan scan = findQuantGroups(one);
            QCOMPARE(scan.groups.size(), std::size_t(1));
            QCOMPARE(scan.groups[0].scales.size(), std::size_t(1));
            alone.push_back(QString::fromStdString(scan.groups[0].scales[0].layout + " / "
                + scan.groups[0].scales[0].problem + " / "
                + (scan.groups[0].scales[0].tiles ? "tiles" : "not")));
        }
        const QuantScan scan = findQuantGroups(all);
        QCOMPARE(scan.groups.size(), order.size());
        QSet<QString> layouts;
        for (std::size_t g = 0; g < scan.groups.size(); ++g) {
            const QuantScale& scale = scan.groups[g].scales.at(0);
            const QString together = QString::fromStdString(
                scale.layout + " / " + scale.problem + " / " + (scale.tiles ? "tiles" : "not"));
            QCOMPARE(together, alone[g]);
            layouts.insert(QString::fromStdString(scale.layout));
        }
        QVERIFY2(layouts.size() >= 5, qPrintable(QStringList(layouts.begin(), layouts.end()).join(u", "_qs)));
    }

    // Names and shapes a hostile header may carry: nothing crashes, nothing overflows.
    void oddShapes()
    {
        Checkpoint checkpoint;
        checkpoint.ensureRoot();
        const std::int64_t huge = std::int64_t(1) << 62;
        checkpoint.tensors.push_back(tensor("a.weight", "float8_e4m3fn", {huge, huge}));
        checkpoint.tensors.push_back(tensor("a.weight_scale_inv", "float32", {huge, 3}));
        checkpoint.tensors.push_back(tensor("b.weight", "float8_e4m3fn", {0, 16}));
        checkpoint.tensors.push_back(tensor("b.weight_scale", "float32", {0, 1}));
        checkpoint.tensors.push_back(tensor("c.qweight", "int32", {huge, huge}));
        checkpoint.tensors.push_back(tensor("c.scales", "float16", {}));
        checkpoint.tensors.push_back(tensor("c.qzeros", "int32", {huge, huge}));
        checkpoint.tensors.push_back(tensor("weight_scale", "float32", {1}));
        checkpoint.tensors.push_back(tensor("d.x_blocks", "uint8", {huge, huge, 16}));
        checkpoint.tensors.push_back(tensor("d.x_scales", "uint8", {huge, huge}));
        checkpoint.tensors.push_back(tensor("e.weight", "float4_e2m1fn_x2", {7}));
        checkpoint.tensors.push_back(tensor("e.weight_scale", "float8_e4m3fn", {-1, 2}));
        addQuantScaleFindings(checkpoint);
        const QuantScan scan = findQuantGroups(checkpoint);
        QVERIFY(scan.groups.size() >= 3);
        QCOMPARE(scan.groupOf.size(), checkpoint.tensors.size());
    }

    // The reader's scan is kept for the report, the tree and the writers (issue 28), and reused
    // only while the checkpoint holds the tensors it scanned: moved, it is the same; a tensor added
    // scans again.
    void keptScan()
    {
        Checkpoint checkpoint;
        checkpoint.ensureRoot();
        checkpoint.tensors.push_back(tensor("a.weight", "float8_e4m3fn", {256, 256}));
        checkpoint.tensors.push_back(tensor("a.weight_scale_inv", "float32", {2, 2}));
        QVERIFY(!checkpoint.quantScan);
        QVERIFY(quantScanOf(checkpoint)); // none kept: made now
        QVERIFY(!checkpoint.quantScan);
        addQuantScaleFindings(checkpoint);
        QVERIFY(checkpoint.quantScan);
        QCOMPARE(quantScanOf(checkpoint).get(), checkpoint.quantScan.get());
        QCOMPARE(quantScanOf(checkpoint)->groups.size(), std::size_t(1));

        Checkpoint moved = std::move(checkpoint); // the same tensor array: the same scan
        QVERIFY(moved.quantScan);
        QCOMPARE(quantScanOf(moved).get(), moved.quantScan.get());

        moved.tensors.reserve(8);
        moved.tensors.push_back(tensor("b.weight", "float8_e4m3fn", {128, 128}));
        const auto rescanned = quantScanOf(moved);
        QVERIFY(rescanned.get() != moved.quantScan.get());
        QCOMPARE(rescanned->groups.size(), std::size_t(2));
        QCOMPARE(rescanned->groupOf.size(), moved.tensors.size());
    }

    // A file cut short: the reader's own finding, and the groups of what is left.
    void truncatedFile()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QByteArray bytes = readAll(quantFixture(u"nvfp4-modelopt.safetensors"_qs));
        QVERIFY(!bytes.isEmpty());
        for (const qsizetype cut : {qsizetype(8), qsizetype(100), bytes.size() / 2, bytes.size() - 1}) {
            const QString path = dir.filePath(u"cut.safetensors"_qs);
            QVERIFY(writeAll(path, bytes.left(cut)));
            const Checkpoint checkpoint = readCheckpoint(path.toStdString());
            QVERIFY(!checkpoint.findings.empty());
            const QuantScan scan = findQuantGroups(checkpoint);
            QCOMPARE(scan.groupOf.size(), checkpoint.tensors.size());
        }
    }
};

QTEST_GUILESS_MAIN(TestQuantGroups)
#include "tst_quantgroups.moc"
