// SPDX-License-Identifier: MIT
#pragma once
// A values scan (`check --values`, the app's Scan Values) as text and as JSON. The findings it adds
// ("values-nonfinite") go out with the triage's (triagereport.h); this says the counts, each
// tensor's statistics and the list of tensors holding NaN or ±Inf, which both faces show.
#include <iosfwd>
#include <string>

namespace ckpt {

class JsonWriter;
struct ValueScanOutcome;
struct TensorValueStatistics;

// "125 tensors scanned, 2 hold NaN or infinities" (", 1 could not be read"): the line both faces
// lead with; the problem (or "cancelled") when nothing was scanned.
std::string valueScanCountsText(const ValueScanOutcome& outcome);

// "12 NaN, 1 +Inf, 0 -Inf of 1,000 values": a listed tensor's counts, as both faces say them.
std::string nonFiniteCountsText(const TensorValueStatistics& tensor);

// "Values: " and the counts, a line per tensor (its range, mean and std, or why it has none), then
// the tensors holding NaN or ±Inf, most first.
void writeValueScanText(std::ostream& out, const ValueScanOutcome& outcome);

// Members of an open object: "values" (every tensor kept, as the helper measured it) and
// "values_nonfinite" (the tensors holding NaN or ±Inf, most first: index, name and counts), or
// "values_error" when nothing was scanned.
void writeValueScanJsonMembers(JsonWriter& writer, const ValueScanOutcome& outcome);

} // namespace ckpt
