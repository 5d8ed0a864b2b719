// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/expected.h"
#include "core/base/finding.h"
#include "core/tasks/valueshelper.h"

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

// What "Scan values" found (core/tasks/valuescan.h's outcome, as the app shows it): the tensors
// holding NaN or ±Inf, most first, with their statistics and histograms, and a "values-nonfinite"
// finding for each, exactly as `ckpt-inspect check --values` reports them.
struct ValueScanResult {
    std::vector<ScannedTensor> nonFinite;
    std::vector<Finding> findings; // one per tensor of nonFinite, in its order
    std::size_t tensorsScanned = 0;
    std::size_t tensorsWithoutValues = 0; // the helper could not compute them (dtype, missing bytes)
    QString countsText; // "5 tensors scanned, 2 hold NaN or infinities" (core/report, as the CLI says it)
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
// one tensor at a time, or for every tensor, as a child process: core/tasks/valuescan.h's task,
// which owns the helper's protocol.
class HelperProcessValues final : public TensorValuesSource {
public:
    explicit HelperProcessValues(ValuesHelper helper);
    Expected<TensorValues> compute(const std::string& checkpointPath, std::uint32_t tensor,
        const std::function<bool()>& keepGoing) const override;
    Expected<ValueScanResult> scan(const std::string& checkpointPath,
        const std::function<bool(std::uint64_t done, std::uint64_t total)>& progress) const override;

    // The helper for this process by the rule both faces follow (core/tasks/valueshelper.h:
    // $CKPT_VALUES_HELPER if set, else ckpt-inspect-values beside the running program). Null when
    // there is none (a build without libtorch): no Values section; findValuesHelper() says why.
    static std::shared_ptr<TensorValuesSource> findForThisProgram();

private:
    ValuesHelper m_helper;
};

// The statistics of one tensor as the panes show them.
TensorValues tensorValuesFrom(const TensorValueStatistics& statistics);

} // namespace ckpt
