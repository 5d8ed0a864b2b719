// SPDX-License-Identifier: MIT
#include "core/report/valuescanreport.h"

#include "core/base/escaping.h"
#include "core/base/textformat.h"
#include "core/json/json.h"
#include "core/tasks/valuescan.h"

#include <iomanip>
#include <ostream>

namespace ckpt {

namespace {

std::string counted(std::size_t count, const char* one, const char* many)
{
    return std::to_string(count) + " " + (count == 1 ? one : many);
}

void writeStatisticsJson(JsonWriter& writer, const TensorValueStatistics& tensor)
{
    writer.beginObject();
    writer.member("index", static_cast<std::uint64_t>(tensor.index));
    writer.member("name", tensor.name);
    if (!tensor.computed()) {
        writer.member("error", tensor.error);
        writer.endObject();
        return;
    }
    writer.member("domain", tensor.domain);
    writer.member("count", tensor.count);
    writer.member("nan", tensor.nanCount);
    writer.member("posinf", tensor.positiveInfinityCount);
    writer.member("neginf", tensor.negativeInfinityCount);
    writer.member("zeros", tensor.zeroCount);
    writer.member("finite", tensor.finiteCount);
    writer.member("copied", tensor.copied);
    writer.member("min", tensor.min);
    writer.member("max", tensor.max);
    writer.member("mean", tensor.mean);
    writer.member("std", tensor.std);
    writer.key("histogram").beginObject();
    writer.member("low", tensor.histogramLow);
    writer.member("high", tensor.histogramHigh);
    writer.key("counts").beginArray();
    for (std::uint64_t count : tensor.histogramCounts)
        writer.value(count);
    writer.endArray();
    writer.endObject();
    writer.endObject();
}

} // namespace

std::string valueScanCountsText(const ValueScanOutcome& outcome)
{
    if (outcome.cancelled)
        return "cancelled";
    if (!outcome.problem.empty())
        return outcome.problem;
    std::string text = counted(outcome.tensorsScanned, "tensor scanned", "tensors scanned") + ", "
        + counted(outcome.nonFinite.size(), "holds", "hold") + " NaN or infinities";
    if (outcome.tensorsWithoutValues)
        text += ", " + std::to_string(outcome.tensorsWithoutValues) + " could not be read";
    return text;
}

std::string nonFiniteCountsText(const TensorValueStatistics& tensor)
{
    return std::to_string(tensor.nanCount) + " NaN, " + std::to_string(tensor.positiveInfinityCount)
        + " +Inf, " + std::to_string(tensor.negativeInfinityCount) + " -Inf of "
        + formatThousands(tensor.count) + " values";
}

void writeValueScanText(std::ostream& out, const ValueScanOutcome& outcome)
{
    out << "\nValues: " << printableText(valueScanCountsText(outcome)) << "\n";
    if (!outcome.scanned())
        return;
    for (const TensorValueStatistics& tensor : outcome.tensors) {
        if (!tensor.computed()) {
            out << "  " << printableText(tensor.name) << ": " << printableText(tensor.error) << "\n";
            continue;
        }
        out << "  " << std::left << std::setw(40) << printableText(tensor.name) << std::right << " min "
            << tensor.min << "  max " << tensor.max << "  mean " << tensor.mean << "  std " << tensor.std
            << (tensor.nonFiniteCount() ? "  (" + nonFiniteCountsText(tensor) + ")" : std::string()) << "\n";
    }
    if (outcome.nonFinite.empty())
        return;
    out << "\nHolding NaN or infinity (most first):\n";
    for (std::size_t t : outcome.nonFinite)
        out << "  " << printableText(outcome.tensors[t].name) << ": "
            << nonFiniteCountsText(outcome.tensors[t]) << "\n";
}

void writeValueScanJsonMembers(JsonWriter& writer, const ValueScanOutcome& outcome)
{
    if (!outcome.scanned()) {
        writer.member("values_error", valueScanCountsText(outcome));
        return;
    }
    writer.key("values").beginArray();
    for (const TensorValueStatistics& tensor : outcome.tensors)
        writeStatisticsJson(writer, tensor);
    writer.endArray();
    writer.key("values_nonfinite").beginArray();
    for (std::size_t t : outcome.nonFinite) {
        const TensorValueStatistics& tensor = outcome.tensors[t];
        writer.beginObject();
        writer.member("index", static_cast<std::uint64_t>(tensor.index));
        writer.member("name", tensor.name);
        writer.member("nan", tensor.nanCount);
        writer.member("posinf", tensor.positiveInfinityCount);
        writer.member("neginf", tensor.negativeInfinityCount);
        writer.member("count", tensor.count);
        writer.endObject();
    }
    writer.endArray();
}

} // namespace ckpt
