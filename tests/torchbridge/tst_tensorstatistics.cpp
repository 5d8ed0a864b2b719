// SPDX-License-Identifier: MIT
// Value statistics computed through libtorch over the memory-mapped file must equal what real
// torch computes after torch.load of the same file: torch 1.13 (CKPT_LEGACY_PYTHON) for the dtypes
// it has, the modern torch (CKPT_MODERN_PYTHON) for float8, uint16+ and complex32. Checkpoints
// with NaN and infinities are written by torch at test time.
#include "core/format/crc32.h"
#include "core/json/json.h"
#include "core/read/checkpointreader.h"
#include "minifloat.h"
#include "nativestatistics.h"
#include "tensorstatistics.h"
#include "valuescan.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <set>

using namespace ckpt;

namespace {

constexpr std::uint32_t kBins = 64;

// argv: out_dir bins writer(legacy|modern|none) files...; prints {file: {name: stats}}. Statistics
// are torch's own over float64 values: complex as hypot(real, imag), quantized as int_repr
// (quint4x2/quint2x4 unpacked from int_repr's packed bytes, low bits first).
const char* kTorchScript = R"PY(
import json, sys, torch
out_dir, bins, writer, files = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
nan, inf = float("nan"), float("inf")
if writer == "legacy":
    g = torch.Generator().manual_seed(7)
    big = torch.randn(3, 1000, 700, generator=g)
    big[0, 5, 6] = nan; big[0, 13, 14] = nan; big[1, 999, 0] = inf; big[2, 0, 0] = -inf; big[1, 3, :] = 0
    base = torch.tensor([[1.0, nan, 3.0, -0.0], [inf, -inf, 0.0, 2.5], [nan, 7.0, -9.0, inf]])
    special = out_dir + "/nonfinite.pt"
    # Histogram edge cases: values on torch's own bin edges and one step either side (histc bins by
    # (x - low) * bins / (high - low), not by comparing with the edges: the two differ here), the
    # maximum on the last edge, subnormals of both widths, signed zeros next to NaN and infinities.
    e = torch.linspace(0.1, 0.7, 65, dtype=torch.float64)
    on_edges = torch.cat([e, torch.nextafter(e, torch.full_like(e, -1.0)), torch.nextafter(e, torch.full_like(e, 2.0))])
    extra = {"edges_f64": on_edges, "edges_f32": on_edges.float(), "edges_f16": on_edges.half(),
             "edges_bf16": on_edges.bfloat16(), "halves_to_64": torch.arange(0, 64.5, 0.5),
             "subnormal_f32": torch.arange(0, 200, dtype=torch.float64).mul(1.4e-45).float(),
             "subnormal_f64": torch.arange(0, 200, dtype=torch.float64).mul(5e-324),
             "signed_zeros": torch.tensor([0.0, -0.0, nan, inf, -inf, 1e-45, -1e-45, 0.0, -0.0, 3e-39])}
    torch.save({**extra, "f32": base, "f32_t": base.t(), "f16": base.half(), "bf16": base.bfloat16(),
                "f64_col": base.double()[:, 1], "clean": torch.arange(12.0).reshape(3, 4),
                "const": torch.full((5,), 2.5), "all_nan": torch.full((4,), nan),
                "i": torch.arange(-5, 7, dtype=torch.int32).reshape(3, 4).t(),
                "c64": torch.tensor([complex(3, 4), complex(nan, 1), complex(inf, nan), 0j]),
                "big": big, "big_bf16_view": big.bfloat16()[:, 10:500:3, ::7]}, special)
    files.append(special)
elif writer == "modern":
    special = out_dir + "/nonfinite_f8.pt"
    x = torch.tensor([[1.0, nan, inf, -inf], [0.0, 500.0, -1000.0, 0.015625], [-0.0, 3.5, -2.0, 1e-3]])
    d = {}
    for name in ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu"]:
        d[name] = x.to(getattr(torch, name))
        d[name + "_t"] = d[name].t()
        d[name + "_all"] = torch.arange(256, dtype=torch.uint8).view(getattr(torch, name))
    d["uint16"] = torch.tensor([0, 1, 65535, 40000], dtype=torch.int32).to(torch.uint16)
    d["uint32"] = torch.tensor([0, 4294967295, 7], dtype=torch.int64).to(torch.uint32)
    d["uint64"] = torch.tensor([0, -1, 2**53 + 1, -2**40], dtype=torch.int64).view(torch.uint64)
    d["complex32"] = torch.tensor([complex(3, 4), complex(nan, 1), complex(inf, 2), 0j]).to(torch.complex32)
    torch.save(d, special)
    files.append(special)

def values(t):
    if t.is_quantized:
        r = t.int_repr()
        if t.dtype in (torch.quint4x2, torch.quint2x4):
            bits = 4 if t.dtype == torch.quint4x2 else 2
            parts = [(r.long() >> (bits * i)) & ((1 << bits) - 1) for i in range(8 // bits)]
            r = torch.stack(parts, -1).flatten()[: t.numel()]
        return r.double()
    if t.is_complex():
        r = torch.view_as_real(t.resolve_conj())
        return torch.hypot(r[..., 0].double(), r[..., 1].double())
    return t.to(torch.float64)

result = {}
def walk(value, name, stats):
    if isinstance(value, torch.Tensor):
        if value.layout != torch.strided or value.device.type != "cpu":
            return
        if "bits" in str(value.dtype) or "float4" in str(value.dtype):
            return
        v = values(value)
        finite = v[torch.isfinite(v)]
        s = {"count": value.numel(), "nan": int(v.isnan().sum()), "posinf": int(v.isposinf().sum()),
             "neginf": int(v.isneginf().sum()), "zeros": int((v == 0).sum()), "finite": finite.numel(),
             "min": 0.0, "max": 0.0, "mean": 0.0, "std": 0.0, "hist": [], "low": 0.0, "high": 0.0}
        if finite.numel():
            lo, hi = float(finite.min()), float(finite.max())
            s.update(min=lo, max=hi, mean=float(finite.mean()),
                     std=float(finite.std()) if finite.numel() > 1 else 0.0)
            if lo == hi:
                lo, hi = lo - 1, hi + 1
            s.update(low=lo, high=hi, hist=[int(c) for c in torch.histc(finite, bins, lo, hi).tolist()])
        stats[name] = s
    elif isinstance(value, dict):
        for k, v in value.items():
            walk(v, f"{name}.{k}" if name else str(k), stats)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            walk(v, f"{name}.{i}" if name else str(i), stats)
for f in files:
    stats = {}
    walk(torch.load(f, map_location="cpu"), "", stats)
    result[f] = stats
print(json.dumps(result))
)PY";

bool close(double a, double b)
{
    if (std::isnan(a) || std::isnan(b))
        return std::isnan(a) && std::isnan(b);
    return std::abs(a - b) <= 1e-9 * std::max(1.0, std::max(std::abs(a), std::abs(b)));
}

QString fixture(const char* version, const char* name)
{
    return QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/%1/%2.pt")
        .arg(QString::fromLatin1(version), QString::fromLatin1(name));
}

// Runs the torch script with one interpreter (a command line: modern-python is a wrapper script).
std::optional<JsonValue> runTorch(const QString& interpreter, const QString& outDir, const QString& writer,
    const QStringList& files, QString* error)
{
    QProcess python;
    python.start(interpreter,
        QStringList {
            QStringLiteral("-c"), QString::fromUtf8(kTorchScript), outDir, QString::number(kBins), writer}
            + files);
    if (!python.waitForFinished(600'000) || python.exitCode() != 0) {
        *error = QString::fromUtf8(python.readAllStandardError());
        return std::nullopt;
    }
    const QByteArray output = python.readAllStandardOutput();
    auto parsed = parseJson(std::string_view(output.constData(), static_cast<std::size_t>(output.size())));
    if (!parsed.hasValue()) {
        *error = QStringLiteral("unparsable output");
        return std::nullopt;
    }
    return std::move(*parsed);
}

} // namespace

class TestTensorStatistics : public QObject {
    Q_OBJECT

    // Compares every tensor torch summarised with ours, computed twice: with the default chunking
    // and with tiny chunks, so the merging of chunk moments, ranges and histograms is exercised.
    void compareAll(const JsonValue& reference, int* compared, std::set<std::string>* nonFiniteSeen)
    {
        for (const JsonMember& file : reference.members()) {
            const Checkpoint checkpoint = readCheckpoint(file.key);
            std::vector<std::uint32_t> expectedNonFinite;
            for (std::uint32_t i = 0; i < checkpoint.tensors.size(); ++i) {
                const JsonValue* want = file.value.find(std::string(checkpoint.tensors[i].name));
                if (!want)
                    continue;
                if (want->member("nan").toUInt64().value_or(0) + want->member("posinf").toUInt64().value_or(0)
                        + want->member("neginf").toUInt64().value_or(0)
                    > 0)
                    expectedNonFinite.push_back(i);
                // The default chunking in the widest vectors, then tiny chunks in the baseline's
                // (the histogram pass has an AVX2 and an SSE2 form; both must bin as torch does).
                for (std::uint64_t chunk : {StatisticsOptions {}.chunkElements, std::uint64_t(7)}) {
                    StatisticsOptions options;
                    options.histogramBins = kBins;
                    options.chunkElements = chunk;
                    options.widestVectors = chunk != 7;
                    const auto got = computeTensorStatistics(checkpoint, i, options);
                    const std::string where = file.key + ": " + checkpoint.tensors[i].name + " ("
                        + checkpoint.tensors[i].dtype + ", chunk " + std::to_string(chunk) + ")";
                    if (!got.hasValue())
                        QFAIL((where + ": " + got.error().message).c_str());
                    QVERIFY2(got->count == want->member("count").toUInt64(), where.c_str());
                    QVERIFY2(got->nanCount == want->member("nan").toUInt64(), where.c_str());
                    QVERIFY2(got->positiveInfinityCount == want->member("posinf").toUInt64(), where.c_str());
                    QVERIFY2(got->negativeInfinityCount == want->member("neginf").toUInt64(), where.c_str());
                    QVERIFY2(got->zeroCount == want->member("zeros").toUInt64(), where.c_str());
                    QVERIFY2(got->finiteCount == want->member("finite").toUInt64(), where.c_str());
                    QVERIFY2(close(got->min, want->member("min").toDouble()), where.c_str());
                    QVERIFY2(close(got->max, want->member("max").toDouble()), where.c_str());
                    QVERIFY2(close(got->mean, want->member("mean").toDouble()), where.c_str());
                    QVERIFY2(close(got->std, want->member("std").toDouble()),
                        (where + " std " + std::to_string(got->std)).c_str());
                    const auto& hist = want->member("hist").items();
                    QVERIFY2(got->histogram.counts.size() == hist.size(), where.c_str());
                    for (std::size_t b = 0; b < hist.size(); ++b)
                        QVERIFY2(got->histogram.counts[b] == hist[b].toUInt64(),
                            (where + " bin " + std::to_string(b)).c_str());
                    if (!hist.empty()) {
                        QVERIFY2(close(got->histogram.low, want->member("low").toDouble()), where.c_str());
                        QVERIFY2(close(got->histogram.high, want->member("high").toDouble()), where.c_str());
                        QCOMPARE(got->histogram.edges().size(), hist.size() + 1);
                    }
                }
                ++*compared;
            }
            // The scan of the whole file names exactly the tensors torch found NaN/Inf in (it also
            // scans tensors torch was not asked about; those must be clean or unreadable).
            const ValueScanResult scan = scanValues(checkpoint);
            QVERIFY(!scan.cancelled);
            QCOMPARE(scan.tensors.size(), checkpoint.tensors.size());
            std::vector<std::uint32_t> flagged;
            for (std::uint32_t index : scan.nonFiniteTensors)
                if (file.value.find(std::string(checkpoint.tensors[index].name)))
                    flagged.push_back(index);
            QVERIFY2(flagged == expectedNonFinite, file.key.c_str());
            if (nonFiniteSeen)
                for (std::uint32_t index : scan.nonFiniteTensors)
                    nonFiniteSeen->emplace(checkpoint.tensors[index].name);
        }
    }

private Q_SLOTS:
    void matchesLegacyTorch()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QStringList files;
        for (const char* name :
            {"dtypes", "views_and_strides", "quantized", "state_dict", "tied_weights", "devices_mixed"})
            files << fixture("torch-1.13", name);
        QString error;
        const auto reference = runTorch(
            QStringLiteral(CKPT_LEGACY_PYTHON), dir.path(), QStringLiteral("legacy"), files, &error);
        QVERIFY2(reference, qPrintable(error));
        std::set<std::string> nonFinite;
        int compared = 0;
        compareAll(*reference, &compared, &nonFinite);
        if (QTest::currentTestFailed())
            return;
        QVERIFY2(compared >= 40, qPrintable(QStringLiteral("only %1 tensors compared").arg(compared)));
        for (const char* name : {"f32", "f32_t", "f16", "bf16", "f64_col", "all_nan", "c64", "big",
                 "big_bf16_view", "signed_zeros"})
            QVERIFY2(nonFinite.count(name), name);
        for (const char* name : {"clean", "const", "i", "edges_f64", "edges_f32", "edges_f16", "edges_bf16",
                 "halves_to_64", "subnormal_f32", "subnormal_f64"})
            QVERIFY2(!nonFinite.count(name), name);
    }

    // The native kernels (contiguous float32/float64/float16/bfloat16) and libtorch's must agree on
    // every tensor, whatever the number of threads: the native ones are chosen per dtype for speed,
    // never for different answers.
    void nativeKernelsAgreeWithLibtorch()
    {
        int compared = 0;
        for (const char* name : {"dtypes", "views_and_strides", "state_dict"}) {
            const Checkpoint checkpoint = readCheckpoint(fixture("torch-1.13", name).toStdString());
            for (std::uint32_t i = 0; i < checkpoint.tensors.size(); ++i) {
                StatisticsOptions reference;
                reference.histogramBins = kBins;
                reference.libtorchOnly = true;
                const auto want = computeTensorStatistics(checkpoint, i, reference);
                if (!want.hasValue())
                    continue;
                for (unsigned threads : {1u, 2u, 3u}) {
                    StatisticsOptions options;
                    options.histogramBins = kBins;
                    options.threads = threads;
                    const auto got = computeTensorStatistics(checkpoint, i, options);
                    const std::string where = std::string(name) + ": " + checkpoint.tensors[i].name + " ("
                        + checkpoint.tensors[i].dtype + ", " + std::to_string(threads) + " threads)";
                    QVERIFY2(got.hasValue(), where.c_str());
                    QVERIFY2(got->count == want->count && got->nanCount == want->nanCount
                            && got->positiveInfinityCount == want->positiveInfinityCount
                            && got->negativeInfinityCount == want->negativeInfinityCount
                            && got->zeroCount == want->zeroCount && got->finiteCount == want->finiteCount,
                        where.c_str());
                    QVERIFY2(close(got->min, want->min) && close(got->max, want->max), where.c_str());
                    QVERIFY2(close(got->mean, want->mean) && close(got->std, want->std), where.c_str());
                    QVERIFY2(got->histogram.counts == want->histogram.counts, where.c_str());
                }
                ++compared;
            }
        }
        QVERIFY2(compared >= 20, qPrintable(QStringLiteral("only %1 tensors compared").arg(compared)));
    }

    // The CRC the first pass computes on the side (for `check --values`) is the CRC of the bytes it
    // read, whatever the dtype and the number of threads: more than two slices' worth of values, so
    // per-thread CRCs are combined, plus an odd tail. The statistics are the same with it or without.
    void firstPassCrcIsTheCrcOfTheBytes()
    {
        const std::size_t bytes = (std::size_t(9) << 22) * 4 + 6;
        std::vector<std::uint8_t> data(bytes);
        std::mt19937_64 random(13);
        for (std::size_t i = 0; i + 8 <= bytes; i += 8) {
            // Finite values only for the float dtypes (exponent bits kept off the all-ones pattern).
            const std::uint64_t word = random() & 0x3FFF3FFF3FFF3FFFull;
            std::memcpy(data.data() + i, &word, 8);
        }
        const std::uint32_t want = crc32Update(0, data.data(), bytes);
        for (const auto& [type, size] :
            {std::pair(NativeFloat::Float32, 4), std::pair(NativeFloat::Float64, 8),
                std::pair(NativeFloat::Float16, 2), std::pair(NativeFloat::BFloat16, 2)}) {
            const std::uint64_t count = bytes / std::uint64_t(size);
            const std::uint32_t wantCovered = crc32Update(0, data.data(), count * std::uint64_t(size));
            NativeStatistics without;
            std::uint64_t done = 0;
            QVERIFY(nativeMoments(type, data.data(), count, NativeScanOptions {}, done, without));
            for (unsigned threads : {1u, 2u, 3u}) {
                NativeScanOptions options;
                options.threads = threads;
                options.crc = true;
                NativeStatistics with;
                done = 0;
                QVERIFY(nativeMoments(type, data.data(), count, options, done, with));
                QCOMPARE(with.crc, wantCovered);
                QCOMPARE(with.finiteCount, without.finiteCount);
                QCOMPARE(with.mean, without.mean);
                QCOMPARE(with.m2, without.m2);
            }
            if (count * std::uint64_t(size) == bytes)
                QCOMPARE(wantCovered, want);
        }
    }

    void matchesModernTorch()
    {
        const QString modern = QStringLiteral(CKPT_MODERN_PYTHON);
        if (modern.isEmpty())
            QSKIP("CKPT_MODERN_PYTHON is not set: no modern torch to compare float8/uint16+ with");
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        // torch 1.13 cannot load torch 2's files (v2 rebuilds with a metadata argument).
        QStringList files;
        for (const char* name : {"dtypes_v3", "dtypes", "views_and_strides", "quantized"})
            files << fixture("torch-2", name);
        QString error;
        const auto reference = runTorch(modern, dir.path(), QStringLiteral("modern"), files, &error);
        QVERIFY2(reference, qPrintable(error));
        std::set<std::string> nonFinite;
        int compared = 0;
        compareAll(*reference, &compared, &nonFinite);
        if (QTest::currentTestFailed())
            return;
        QVERIFY2(compared >= 40, qPrintable(QStringLiteral("only %1 tensors compared").arg(compared)));
        // e4m3fn has no infinity (torch saturated inf to 448 here) but a NaN; e5m2 keeps ±Inf.
        for (const char* name :
            {"float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "complex32"})
            QVERIFY2(nonFinite.count(name), name);
    }

    void float8DecodersAreExact()
    {
        // Spot values from the OCP FP8 specification and torch's c10 Float8 types.
        QCOMPARE(decodeFloat8(Float8Format::E4M3FN, 0x7E), 448.0);
        QVERIFY(std::isnan(decodeFloat8(Float8Format::E4M3FN, 0xFF)));
        QCOMPARE(decodeFloat8(Float8Format::E4M3FN, 0x01), std::ldexp(1.0, -9));
        QCOMPARE(decodeFloat8(Float8Format::E5M2, 0x7B), 57344.0);
        QVERIFY(
            std::isinf(decodeFloat8(Float8Format::E5M2, 0xFC)) && decodeFloat8(Float8Format::E5M2, 0xFC) < 0);
        QCOMPARE(decodeFloat8(Float8Format::E4M3FNUZ, 0x7F), 240.0);
        QCOMPARE(decodeFloat8(Float8Format::E5M2FNUZ, 0x7F), 57344.0);
        QVERIFY(std::isnan(decodeFloat8(Float8Format::E5M2FNUZ, 0x80)));
        QCOMPARE(decodeFloat8(Float8Format::E8M0FNU, 127), 1.0);
        QCOMPARE(decodeFloat8(Float8Format::E8M0FNU, 0), std::ldexp(1.0, -127));
    }

    void unsupportedDtypesSayWhy()
    {
        const Checkpoint checkpoint = readCheckpoint(fixture("torch-2", "dtypes_v3").toStdString());
        int refused = 0;
        for (std::uint32_t i = 0; i < checkpoint.tensors.size(); ++i) {
            const std::string& dtype = checkpoint.tensors[i].dtype;
            if (dtype.rfind("bits", 0) == 0 || dtype == "float4_e2m1fn_x2") {
                const auto got = computeTensorStatistics(checkpoint, i);
                QVERIFY(!got.hasValue());
                QVERIFY(got.error().message.find(dtype) != std::string::npos);
                ++refused;
            }
        }
        QCOMPARE(refused, 3);
    }

    void cancelStopsHalfWay()
    {
        const Checkpoint checkpoint = readCheckpoint(fixture("torch-1.13", "many_tensors").toStdString());
        QVERIFY(checkpoint.tensors.size() >= 4);
        const ValueScanResult full = scanValues(checkpoint);
        QVERIFY(!full.cancelled);
        std::uint64_t calls = 0, lastDone = 0;
        const ValueScanResult half = scanValues(checkpoint, [&](std::uint64_t done, std::uint64_t total) {
            ++calls;
            if (done < lastDone)
                return false; // progress must not go backwards
            lastDone = done;
            return done * 2 < total;
        });
        QVERIFY(half.cancelled);
        QVERIFY(calls > 1);
        QVERIFY2(!half.tensors.empty() && half.tensors.size() < full.tensors.size(),
            qPrintable(QStringLiteral("%1 of %2").arg(half.tensors.size()).arg(full.tensors.size())));
        QVERIFY(half.bytesScanned < full.bytesScanned);
        // What was finished before the cancel is the same as in the full scan.
        for (std::size_t i = 0; i < half.tensors.size(); ++i) {
            QCOMPARE(half.tensors[i].tensorIndex, full.tensors[i].tensorIndex);
            QCOMPARE(half.tensors[i].statistics.has_value(), full.tensors[i].statistics.has_value());
            if (half.tensors[i].statistics)
                QCOMPARE(half.tensors[i].statistics->mean, full.tensors[i].statistics->mean);
        }
        // A subset scans only what was asked.
        const ValueScanResult subset = scanValues(checkpoint, {}, std::vector<std::uint32_t> {1, 0});
        QCOMPARE(subset.tensors.size(), std::size_t(2));
        QCOMPARE(subset.tensors[0].tensorIndex, 1u);
    }
};

QTEST_APPLESS_MAIN(TestTensorStatistics)
#include "tst_tensorstatistics.moc"
