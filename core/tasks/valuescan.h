// SPDX-License-Identifier: MIT
#pragma once
// "Scan values", once for both faces: `ckpt-inspect check --values` and the app's Scan Values (and
// its Details pane, for one tensor) run this task through the ckpt-inspect-values helper
// (valueshelper.h) and render its outcome (core/report/valuescanreport.h). Tensors holding NaN or
// ±Inf are findings ("values-nonfinite", one per tensor) and a list, the same in both faces. The
// task never prints and never asks.
#include "core/base/finding.h"
#include "core/tasks/valueshelper.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ckpt {

struct ValueScanRequest {
    std::string path; // a checkpoint file, or a folder of shards (the helper opens it as `info` does)
    std::optional<std::uint32_t> onlyTensor; // one tensor (the Details pane), else every tensor
    // Also the CRC of every storage record the helper read whole, in the same pass (`check
    // --values` hands them to the integrity check instead of reading those records again).
    bool recordCrcs = false;
    // false: keep only the statistics of tensors holding NaN or ±Inf, and of those that could not
    // be read (the app's list): a scan of a million tensors then holds no histogram it never shows.
    // Counts and findings are the same either way.
    bool keepEveryTensor = true;
    ValuesProgress progress; // bytes of tensor data done and in all; false cancels
    std::optional<ValuesHelper> helper; // unset: findValuesHelper()
};

struct ValueScanOutcome {
    std::string path;
    std::string problem; // why there are no values at all (no helper, it failed, its answer); else empty
    bool cancelled = false;
    std::vector<TensorValueStatistics> tensors; // in the checkpoint's order (see keepEveryTensor)
    // Indices into `tensors` of those holding NaN or ±Inf, most first (then in the checkpoint's
    // order): the list both faces show.
    std::vector<std::size_t> nonFinite;
    std::size_t tensorsScanned = 0; // every tensor with values of its own the helper listed
    std::size_t tensorsWithoutValues = 0; // of them, those it could not compute (dtype, missing bytes)
    std::vector<Finding> findings; // one "values-nonfinite" warning per tensor of `nonFinite`
    std::vector<KnownRecordCrc> recordCrcs; // when asked
    bool scanned() const { return problem.empty() && !cancelled; }
};

ValueScanOutcome scanValues(const ValueScanRequest& request);

// The finding for a tensor holding NaN or ±Inf (what scanValues adds per tensor).
Finding nonFiniteValuesFinding(const TensorValueStatistics& tensor);

} // namespace ckpt
