// SPDX-License-Identifier: MIT
#pragma once
// The trial on this machine's GPUs (core/tasks/cudatrial.h) as text and as JSON: `plan --trial`
// prints them and the app's trial dialog shows the same text.
#include <iosfwd>

namespace ckpt {

class JsonWriter;
struct CudaMeasurement;
struct CudaTrialOutcome;

// What --measure found: per device, CUDA's free memory with the context made and the context's
// size (or why it is not measured).
void writeCudaMeasurementText(std::ostream& out, const CudaMeasurement& measurement);
void writeCudaMeasurementJson(JsonWriter& writer, const CudaMeasurement& measurement);

// {"ran", "unavailable", "measured", "devices": [...], "fits", "load": {"requested", "matched"},
// "cancelled", "notes"}.
void writeCudaTrialJson(JsonWriter& writer, const CudaTrialOutcome& outcome);
void writeCudaTrialText(std::ostream& out, const CudaTrialOutcome& outcome);

} // namespace ckpt
