// SPDX-License-Identifier: MIT
#pragma once
// The `ckpt-inspect-values` helper's protocol, owned here once for both faces. The helper is the
// one program that may load libtorch; `ckpt-inspect check --values` and `diff`, and the app's
// Details pane, Scan Values and Compare With… ask it through this file and nowhere else: how it is
// found, how it is run (core/io/process.h, with progress and cancel), how much of its answer is
// accepted and how that answer is read. The tasks over it are valuescan.h and comparison.h.
//
// Finding the helper, one rule for every program that asks: $CKPT_VALUES_HELPER when it is set
// and not empty (it must then name an executable file: there is no fallback past a variable that
// names something else), otherwise `ckpt-inspect-values` in the folder of the running program
// (/proc/self/exe: the helper is installed beside ckpt-inspect and ckpt-inspector, and the build
// tree repeats that layout).
//
// Its answer is one JSON document with one array element per line:
//
//     {"file":"model.pt","tensors":[
//     {"index":0,"name":"w","domain":"values","count":6,...,"histogram":{...}},
//     {"index":1,"name":"b","error":"no bytes"}
//     ],"crcs":[
//     {"record":"archive/data/0","offset":1088,"length":24,"crc":305419896}
//     ]}
//
// (`--diff A B` answers {"pairs":[ ... ]} the same way). Any JSON reader takes it whole; this file
// reads it a line at a time, each element parsed on its own into the statistics kept, so that the
// memory an answer takes follows what is kept, never a tree of the whole document.
#include "core/base/expected.h"
#include "core/json/json.h"
#include "core/triage/triage.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ckpt {

inline constexpr const char* kValuesHelperName = "ckpt-inspect-values";
inline constexpr const char* kValuesHelperVariable = "CKPT_VALUES_HELPER";

// The most standard output read from one run of the helper: 2 GiB. Its statistics of a tensor
// take about 0.6-0.8 KiB (fourteen numbers, the name, and 64 histogram counts of up to seven
// digits for a tensor of tens of millions of values), so 1,000,000 tensors answer in about
// 0.8 GB; 2 GiB leaves room for long names and ten-digit counts (2.1 KiB a tensor at a million
// tensors) and still bounds what a runaway helper can make this process hold. The same limit for
// every face and mode: a scan that one face can read, the other can too.
inline constexpr std::size_t kValuesHelperOutputLimit = std::size_t(2) << 30;

// The helper for this process, by the rule above: its path, or why there is none.
struct ValuesHelper {
    std::string program; // empty when there is none
    std::string problem; // why there is none ("ckpt-inspect-values, built only where ...")
    explicit operator bool() const { return !program.empty(); }
};
ValuesHelper findValuesHelper();

// One tensor's values as the helper measured them (torchbridge's TensorStatistics, over JSON).
struct TensorValueStatistics {
    std::uint32_t index = 0; // into the tensors of the checkpoint the helper opened
    std::string name;
    std::string error; // not empty: the helper could not compute this tensor's values (and why)
    std::string domain; // "values" for real numbers; "booleans", "magnitudes |z|", "int_repr"
    std::uint64_t count = 0, nanCount = 0, positiveInfinityCount = 0, negativeInfinityCount = 0;
    std::uint64_t zeroCount = 0, finiteCount = 0;
    double min = 0, max = 0, mean = 0, std = 0; // over the finite values; std is torch's (unbiased)
    bool copied = false; // decoded in chunks (float8, uint16+, sub-byte quantized)
    double histogramLow = 0, histogramHigh = 0;
    std::vector<std::uint64_t> histogramCounts; // of the finite values
    bool computed() const { return error.empty(); }
    std::uint64_t nonFiniteCount() const { return nanCount + positiveInfinityCount + negativeInfinityCount; }
};

// How a run of the helper goes: progress ("progress DONE TOTAL" lines on its standard error, in
// bytes of tensor data) and cancel (false from `progress` kills it).
using ValuesProgress = std::function<bool(std::uint64_t done, std::uint64_t total)>;

// The helper's answer as read, or why it cannot be read.
struct ValuesHelperAnswer {
    std::vector<TensorValueStatistics> tensors; // "tensors", those `keep` kept, in the helper's order
    std::vector<KnownRecordCrc> recordCrcs; // "crcs"
    std::vector<JsonValue> pairs; // "pairs" (--diff), each as the helper wrote it (valuedelta.h reads them)
    bool cancelled = false; // `progress` said stop: nothing else is set
};

// Runs the helper with `arguments` and `input` on its standard input, to its end, and reads its
// answer. `keep`, when set, chooses the tensors kept (the others are read and dropped). An error
// names what went wrong: it could not start, it failed (its exit status and standard error), its
// answer passed kValuesHelperOutputLimit or is not the protocol above.
Expected<ValuesHelperAnswer> runValuesHelper(const ValuesHelper& helper,
    const std::vector<std::string>& arguments, const std::string& input = {},
    const ValuesProgress& progress = {}, const std::function<bool(const TensorValueStatistics&)>& keep = {});

// Reads an answer already in hand (the protocol alone; runValuesHelper uses it).
Expected<ValuesHelperAnswer> readValuesHelperAnswer(
    std::string_view text, const std::function<bool(const TensorValueStatistics&)>& keep = {});

} // namespace ckpt
