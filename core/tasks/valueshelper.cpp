// SPDX-License-Identifier: MIT
#include "core/tasks/valueshelper.h"

#include "core/base/textformat.h"
#include "core/io/process.h"

#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <unistd.h>

namespace ckpt {

namespace {

bool isExecutableFile(const std::string& path)
{
    std::error_code error;
    return std::filesystem::is_regular_file(path, error) && ::access(path.c_str(), X_OK) == 0;
}

// One element of "tensors".
TensorValueStatistics statisticsFromJson(const JsonValue& entry)
{
    const auto count = [&](std::string_view key) { return entry.member(key).toUInt64().value_or(0); };
    TensorValueStatistics values;
    values.index = static_cast<std::uint32_t>(count("index"));
    values.name = entry.member("name").toString();
    if (const JsonValue* error = entry.find("error")) {
        values.error = error->toString().empty() ? std::string("no values") : error->toString();
        return values;
    }
    values.domain = entry.member("domain").toString();
    values.count = count("count");
    values.nanCount = count("nan");
    values.positiveInfinityCount = count("posinf");
    values.negativeInfinityCount = count("neginf");
    values.zeroCount = count("zeros");
    values.finiteCount = count("finite");
    values.min = entry.member("min").toDouble();
    values.max = entry.member("max").toDouble();
    values.mean = entry.member("mean").toDouble();
    values.std = entry.member("std").toDouble();
    values.copied = entry.member("copied").toBool();
    const JsonValue& histogram = entry.member("histogram");
    values.histogramLow = histogram.member("low").toDouble();
    values.histogramHigh = histogram.member("high").toDouble();
    const auto& bins = histogram.member("counts").items();
    values.histogramCounts.reserve(bins.size());
    for (const JsonValue& bin : bins)
        values.histogramCounts.push_back(bin.toUInt64().value_or(0));
    return values;
}

// One element of "crcs", or nothing when it is not one.
std::optional<KnownRecordCrc> recordCrcFromJson(const JsonValue& record)
{
    const auto offset = record.member("offset").toUInt64();
    const auto length = record.member("length").toUInt64();
    const auto crc = record.member("crc").toUInt64();
    if (!offset || !length || !crc || *crc > 0xFFFFFFFFu)
        return std::nullopt;
    return KnownRecordCrc {record.member("record").toString(), *offset, *length, std::uint32_t(*crc)};
}

// The key of the array a line opens: `"tensors":[` at its end.
std::optional<std::string_view> openedArray(std::string_view line)
{
    if (line.size() < 4 || line.substr(line.size() - 3) != "\":[")
        return std::nullopt;
    const std::string_view before = line.substr(0, line.size() - 3);
    const std::size_t quote = before.rfind('"');
    if (quote == std::string_view::npos)
        return std::nullopt;
    return before.substr(quote + 1);
}

// "progress DONE TOTAL".
bool parseProgressLine(std::string_view line, std::uint64_t& done, std::uint64_t& total)
{
    constexpr std::string_view kPrefix = "progress ";
    if (line.substr(0, kPrefix.size()) != kPrefix)
        return false;
    line.remove_prefix(kPrefix.size());
    const std::size_t space = line.find(' ');
    if (space == std::string_view::npos)
        return false;
    std::uint64_t d = 0, t = 0;
    const std::string_view first = line.substr(0, space), second = line.substr(space + 1);
    if (std::from_chars(first.data(), first.data() + first.size(), d).ec != std::errc()
        || std::from_chars(second.data(), second.data() + second.size(), t).ec != std::errc())
        return false;
    done = d;
    total = t;
    return true;
}

} // namespace

ValuesHelper findValuesHelper()
{
    ValuesHelper helper;
    if (const char* named = std::getenv(kValuesHelperVariable); named && *named) {
        if (isExecutableFile(named))
            helper.program = std::filesystem::absolute(named).lexically_normal().string();
        else
            helper.problem = std::string(kValuesHelperName) + " (" + kValuesHelperVariable + " names " + named
                + ", which is not an executable file)";
        return helper;
    }
    if (auto beside = programBesideThisOne(kValuesHelperName); beside && isExecutableFile(*beside)) {
        helper.program = *beside;
        return helper;
    }
    helper.problem = std::string(kValuesHelperName)
        + ", built only where libtorch is installed (it is missing beside this program, and "
        + kValuesHelperVariable + " is not set)";
    return helper;
}

Expected<ValuesHelperAnswer> readValuesHelperAnswer(
    std::string_view text, const std::function<bool(const TensorValueStatistics&)>& keep)
{
    ValuesHelperAnswer answer;
    std::string_view array; // the array whose elements the next lines are
    bool opened = false, closed = false;
    std::size_t lineNumber = 0;
    while (!text.empty()) {
        const std::size_t end = text.find('\n');
        std::string_view line = text.substr(0, end);
        text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
        ++lineNumber;
        while (!line.empty() && (line.back() == ' ' || line.back() == '\r' || line.back() == '\t'))
            line.remove_suffix(1);
        if (line.empty())
            continue;
        const auto malformed = [&](std::string_view why) {
            return makeError(std::string(kValuesHelperName) + " answered outside its protocol (line "
                + std::to_string(lineNumber) + ": " + std::string(why) + ")");
        };
        if (closed)
            return malformed("text after the end of the answer");
        if (!opened) {
            if (line.front() != '{')
                return malformed("not a JSON object");
            opened = true;
        } else if (line.front() == ']') {
            if (array.empty())
                return malformed("an array closed that was never opened");
            array = {};
            if (line == "]}") {
                closed = true;
                continue;
            }
        } else if (!array.empty()) {
            if (line.back() == ',')
                line.remove_suffix(1);
            auto element = parseJson(line);
            if (!element)
                return malformed(element.error().message);
            if (array == "tensors") {
                TensorValueStatistics values = statisticsFromJson(*element);
                if (!keep || keep(values))
                    answer.tensors.push_back(std::move(values));
            } else if (array == "crcs") {
                if (auto crc = recordCrcFromJson(*element))
                    answer.recordCrcs.push_back(std::move(*crc));
            } else if (array == "pairs") {
                answer.pairs.push_back(std::move(*element));
            }
            continue;
        } else if (line == "}") {
            closed = true;
            continue;
        }
        // The first line, or one that closed an array: it may open the next.
        if (auto name = openedArray(line))
            array = *name;
        else if (line.front() == '{' && line.back() == '}' && lineNumber == 1 && text.empty())
            return malformed("the whole answer on one line; one element a line is expected");
        else
            return malformed("an array was expected to open");
    }
    if (!closed)
        return makeError(std::string(kValuesHelperName) + "'s answer ended early (no closing \"]}\")");
    return answer;
}

Expected<ValuesHelperAnswer> runValuesHelper(const ValuesHelper& helper,
    const std::vector<std::string>& arguments, const std::string& input, const ValuesProgress& progress,
    const std::function<bool(const TensorValueStatistics&)>& keep)
{
    if (!helper)
        return makeError(helper.problem);
    // Asked between progress lines too, so that a cancel takes effect while the helper is still
    // starting or reading one large tensor.
    bool keepGoing = true;
    std::uint64_t done = 0, total = 0;
    const auto ask = [&] {
        keepGoing = keepGoing && (!progress || progress(done, total));
        return keepGoing;
    };
    ProcessRequest request;
    request.program = helper.program;
    request.arguments = arguments;
    request.input = input;
    request.keepGoing = ask;
    request.captureErrors = true;
    request.maxOutputBytes = kValuesHelperOutputLimit;
    std::string otherErrors; // what it wrote on standard error besides progress lines
    request.onErrorLine = [&](std::string_view line) {
        if (parseProgressLine(line, done, total)) {
            ask();
            return;
        }
        if (!otherErrors.empty())
            otherErrors += '\n';
        otherErrors += line;
    };
    const auto run = runProcess(request);
    if (!run)
        return run.error();
    if (run->cancelled || !keepGoing) {
        ValuesHelperAnswer cancelled;
        cancelled.cancelled = true;
        return cancelled;
    }
    if (run->outputTooLarge)
        return makeError(std::string(kValuesHelperName) + "'s answer passed "
            + formatBytes(kValuesHelperOutputLimit)
            + ", the most this program reads from it; it was stopped");
    if (!run->succeeded()) {
        std::string why
            = run->exitedNormally ? "exit status " + std::to_string(run->exitCode) : "killed by a signal";
        while (!otherErrors.empty() && (otherErrors.back() == '\n' || otherErrors.back() == ' '))
            otherErrors.pop_back();
        if (!otherErrors.empty())
            why += ": " + otherErrors;
        return makeError(std::string(kValuesHelperName) + " failed (" + why + ")");
    }
    return readValuesHelperAnswer(run->output, keep);
}

} // namespace ckpt
