// Value statistics computed through libtorch over the memory-mapped file must equal what real
// torch computes after torch.load of the same file (run here through CKPT_LEGACY_PYTHON).
#include "checkpointreader.h"
#include "json.h"
#include "tensorstatistics.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>

using namespace ckpt;

namespace {

// Loads each file with torch (trusted fixtures only) and prints {file: {name: stats}}; first writes
// a checkpoint holding NaN and infinities with torch.save, so those counts are exercised too.
const char* kTorchScript = R"PY(
import json, sys, torch
out_dir, files = sys.argv[1], sys.argv[2:]
special = out_dir + "/nonfinite.pt"
torch.save({"w": torch.tensor([[1.0, float("nan"), 3.0], [float("inf"), -float("inf"), 0.0]]),
            "h": torch.tensor([0.5, float("nan"), -2.0], dtype=torch.float16),
            "i": torch.arange(-5, 7, dtype=torch.int32).reshape(3, 4).t()}, special)
result = {}
def walk(value, name, stats):
    if isinstance(value, torch.Tensor):
        if value.layout != torch.strided or value.is_quantized or value.is_complex() or value.device.type != "cpu":
            return
        v = value.double()
        finite = v[torch.isfinite(v)]
        stats[name] = {"count": v.numel(), "nan": int(v.isnan().sum()), "posinf": int(v.isposinf().sum()),
                       "neginf": int(v.isneginf().sum()), "zeros": int((v == 0).sum()),
                       "min": float(finite.min()) if finite.numel() else 0.0, "max": float(finite.max()) if finite.numel() else 0.0,
                       "mean": float(finite.mean()) if finite.numel() else 0.0,
                       "std": float(finite.std()) if finite.numel() > 1 else 0.0}
    elif isinstance(value, dict):
        for k, v in value.items():
            walk(v, f"{name}.{k}" if name else str(k), stats)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            walk(v, f"{name}.{i}" if name else str(i), stats)
for f in files + [special]:
    stats = {}
    walk(torch.load(f, map_location="cpu"), "", stats)
    result[f] = stats
print(json.dumps(result))
)PY";

bool close(double a, double b)
{
    return std::abs(a - b) <= 1e-9 * std::max(1.0, std::max(std::abs(a), std::abs(b)));
}

} // namespace

class TestTensorStatistics : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void matchesTorch()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QStringList files;
        for (const char* name :
            {"dtypes", "views_and_strides", "state_dict", "tied_weights", "devices_mixed"})
            files << QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/torch-1.13/%1.pt")
                         .arg(QString::fromLatin1(name));
        QProcess python;
        python.start(QStringLiteral(CKPT_LEGACY_PYTHON),
            QStringList {QStringLiteral("-c"), QString::fromUtf8(kTorchScript), dir.path()} + files);
        QVERIFY(python.waitForFinished(300'000));
        QVERIFY2(python.exitCode() == 0, python.readAllStandardError().constData());
        const QByteArray output = python.readAllStandardOutput();
        const auto parsed
            = parseJson(std::string_view(output.constData(), static_cast<std::size_t>(output.size())));
        QVERIFY(parsed.hasValue());

        int compared = 0;
        for (const JsonMember& file : parsed->members()) {
            const Checkpoint checkpoint = readCheckpoint(file.key);
            for (std::uint32_t i = 0; i < checkpoint.tensors.size(); ++i) {
                const JsonValue* want = file.value.find(checkpoint.tensors[i].name);
                if (!want)
                    continue;
                const auto got = computeTensorStatistics(checkpoint, i);
                QVERIFY2(got.hasValue(), got.hasValue() ? "" : got.error().message.c_str());
                const std::string where = file.key + ": " + checkpoint.tensors[i].name;
                QVERIFY2(got->count == want->member("count").toUInt64(), where.c_str());
                QVERIFY2(got->nanCount == want->member("nan").toUInt64(), where.c_str());
                QVERIFY2(got->positiveInfinityCount == want->member("posinf").toUInt64(), where.c_str());
                QVERIFY2(got->negativeInfinityCount == want->member("neginf").toUInt64(), where.c_str());
                QVERIFY2(got->zeroCount == want->member("zeros").toUInt64(), where.c_str());
                QVERIFY2(close(got->min, want->member("min").toDouble()), where.c_str());
                QVERIFY2(close(got->max, want->member("max").toDouble()), where.c_str());
                QVERIFY2(close(got->mean, want->member("mean").toDouble()), where.c_str());
                QVERIFY2(close(got->std, want->member("std").toDouble()), where.c_str());
                ++compared;
            }
        }
        QVERIFY2(compared >= 20, qPrintable(QStringLiteral("only %1 tensors compared").arg(compared)));
    }
};

QTEST_APPLESS_MAIN(TestTensorStatistics)
#include "tst_tensorstatistics.moc"
