// SPDX-License-Identifier: MIT
#include "ui/values/tensorvalues.h"

#include "core/report/valuescanreport.h"
#include "core/tasks/valuescan.h"

namespace ckpt {

HelperProcessValues::HelperProcessValues(ValuesHelper helper)
    : m_helper(std::move(helper))
{ }

std::shared_ptr<TensorValuesSource> HelperProcessValues::findForThisProgram()
{
    ValuesHelper helper = findValuesHelper();
    if (!helper)
        return nullptr;
    return std::make_shared<HelperProcessValues>(std::move(helper));
}

TensorValues tensorValuesFrom(const TensorValueStatistics& statistics)
{
    TensorValues values;
    values.domain = QString::fromStdString(statistics.domain);
    values.count = statistics.count;
    values.nanCount = statistics.nanCount;
    values.positiveInfinityCount = statistics.positiveInfinityCount;
    values.negativeInfinityCount = statistics.negativeInfinityCount;
    values.zeroCount = statistics.zeroCount;
    values.finiteCount = statistics.finiteCount;
    values.min = statistics.min;
    values.max = statistics.max;
    values.mean = statistics.mean;
    values.std = statistics.std;
    values.copied = statistics.copied;
    values.histogramLow = statistics.histogramLow;
    values.histogramHigh = statistics.histogramHigh;
    values.histogramCounts = statistics.histogramCounts;
    return values;
}

Expected<TensorValues> HelperProcessValues::compute(
    const std::string& checkpointPath, std::uint32_t tensor, const std::function<bool()>& keepGoing) const
{
    ValueScanRequest request;
    request.path = checkpointPath;
    request.onlyTensor = tensor;
    request.helper = m_helper;
    request.progress = [&keepGoing](std::uint64_t, std::uint64_t) { return !keepGoing || keepGoing(); };
    const ValueScanOutcome outcome = scanValues(request);
    if (outcome.cancelled)
        return makeError("cancelled");
    if (!outcome.problem.empty())
        return makeError(outcome.problem);
    for (const TensorValueStatistics& entry : outcome.tensors)
        if (entry.index == tensor)
            return entry.computed() ? Expected<TensorValues>(tensorValuesFrom(entry))
                                    : makeError(entry.error);
    return makeError("no values: the tensor has no storage of its own");
}

Expected<ValueScanResult> HelperProcessValues::scan(const std::string& checkpointPath,
    const std::function<bool(std::uint64_t done, std::uint64_t total)>& progress) const
{
    ValueScanRequest request;
    request.path = checkpointPath;
    request.helper = m_helper;
    request.progress = progress;
    request.keepEveryTensor = false; // the panel lists those holding NaN or ±Inf only
    const ValueScanOutcome outcome = scanValues(request);
    ValueScanResult result;
    if (outcome.cancelled) {
        result.cancelled = true;
        return result;
    }
    if (!outcome.problem.empty())
        return makeError(outcome.problem);
    result.tensorsScanned = outcome.tensorsScanned;
    result.tensorsWithoutValues = outcome.tensorsWithoutValues;
    result.countsText = QString::fromStdString(valueScanCountsText(outcome));
    result.findings = outcome.findings;
    for (std::size_t t : outcome.nonFinite) {
        const TensorValueStatistics& entry = outcome.tensors[t];
        result.nonFinite.push_back(
            {entry.index, QString::fromStdString(entry.name), tensorValuesFrom(entry)});
    }
    return result;
}

} // namespace ckpt
