// SPDX-License-Identifier: MIT
#pragma once
// The safety verdict (would loading this file run code?) as text and as JSON: `info`, `check` and
// `remap` lead with it.
#include <string>

namespace ckpt {

class JsonWriter;
struct SafetyVerdict;

// "safety: RATING: headline" and one indented line per callable, problem, vetted class and note;
// every name and message made printable (they come from the file).
std::string safetyText(const SafetyVerdict& safety);
void writeSafetyJson(JsonWriter& writer, const SafetyVerdict& safety);

} // namespace ckpt
