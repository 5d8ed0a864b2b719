// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/expected.h"

#include <QString>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ckpt {

// The statistics of one tensor's values as the details pane shows them (torchbridge's
// TensorStatistics, as ckpt-inspect-values writes it in JSON).
struct TensorValues {
    QString domain; // "values" for real numbers; "booleans", "magnitudes |z|", "int_repr" otherwise
    std::uint64_t count = 0, nanCount = 0, positiveInfinityCount = 0, negativeInfinityCount = 0;
    std::uint64_t zeroCount = 0, finiteCount = 0;
    double min = 0, max = 0, mean = 0, std = 0; // over the finite values; std is torch's (unbiased)
    bool copied = false; // decoded in chunks (float8, uint16+, sub-byte quantized)
    double histogramLow = 0, histogramHigh = 0;
    std::vector<std::uint64_t> histogramCounts;
    bool isRealDomain() const { return domain == QLatin1String("values"); }
    std::uint64_t nonFiniteCount() const { return nanCount + positiveInfinityCount + negativeInfinityCount; }
};

// One tensor of a whole-checkpoint scan.
struct ScannedTensor {
    std::uint32_t tensor = 0; // index into Checkpoint::tensors
    QString name;
    TensorValues values;
};

// What "Scan values" found: the tensors holding NaN or ±Inf, with their statistics and histograms.
struct ValueScanResult {
    std::vector<ScannedTensor> nonFinite;
    std::size_t tensorsScanned = 0;
    std::size_t tensorsWithoutValues = 0; // the helper could not compute them (dtype, missing bytes)
    bool cancelled = false;
};

// Where the GUI gets tensor values from. Computing them needs libtorch, which the GUI process
// never loads (hundreds of MiB and most of a second at every start, for a section many sessions
// never look at): the app fills this in with something that asks elsewhere.
class TensorValuesSource {
public:
    virtual ~TensorValuesSource() = default;
    // Runs on a worker thread. `keepGoing` turns false once the result is no longer wanted (another
    // tensor was selected); the source then gives up as soon as it can.
    virtual Expected<TensorValues> compute(const std::string& checkpointPath, std::uint32_t tensor,
        const std::function<bool()>& keepGoing) const = 0;
    // Every tensor of the checkpoint (all shards of a folder), on a worker thread. `progress` gets
    // bytes of tensor data done and in all; false from it cancels (the result then says so).
    virtual Expected<ValueScanResult> scan(const std::string& checkpointPath,
        const std::function<bool(std::uint64_t done, std::uint64_t total)>& progress) const = 0;
};

// Asks the ckpt-inspect-values program (the same helper `ckpt-inspect check --values` runs) for
// one tensor at a time, as a child process.
class HelperProcessValues final : public TensorValuesSource {
public:
    explicit HelperProcessValues(QString program);
    Expected<TensorValues> compute(const std::string& checkpointPath, std::uint32_t tensor,
        const std::function<bool()>& keepGoing) const override;
    Expected<ValueScanResult> scan(const std::string& checkpointPath,
        const std::function<bool(std::uint64_t done, std::uint64_t total)>& progress) const override;

    // The helper for this process: $CKPT_VALUES_HELPER if set, else ckpt-inspect-values next to
    // the running program. Null when there is none (a build without libtorch): no Values section.
    static std::shared_ptr<TensorValuesSource> findForThisProgram();
    // The helper's path by the same rule, empty when there is none (the comparison view runs its
    // --diff mode itself).
    static QString programForThisProcess();

private:
    QString m_program;
};

} // namespace ckpt
