// SPDX-License-Identifier: MIT
#include "core/report/safetyreport.h"

#include "core/base/escaping.h"
#include "core/json/json.h"
#include "core/safety/pickleverdict.h"

namespace ckpt {

std::string safetyText(const SafetyVerdict& safety)
{
    std::string text = "safety: " + std::string(pickleSafetyName(safety.rating)) + ": "
        + printableText(safety.headline) + "\n";
    for (const UnsafeCallable& callable : safety.unsafe)
        text += std::string("  ") + (callable.knownDangerous ? "dangerous      " : "cannot verify  ")
            + printableText(callable.name) + ": " + printableText(callable.reason) + " ("
            + printableText(callable.where) + ")"
            + (callable.call.empty() ? std::string()
                                     : "\n                 would run " + printableText(callable.call))
            + "\n";
    for (const std::string& problem : safety.cannotVerify)
        text += "  cannot verify  " + printableText(problem) + "\n";
    if (safety.rating != PickleSafety::DangerousOrUnknown)
        for (const AllowlistCandidate& candidate : safety.allowlist)
            text += "  vetted inert   " + printableText(candidate.name) + ": "
                + printableText(candidate.reason)
                + (candidate.torch2Default ? "" : "; not on torch 2.x's default list")
                + (candidate.torch113Default ? "" : "; not on torch 1.13's default list") + "\n";
    for (const std::string& note : safety.notes)
        text += "  note: " + printableText(note) + "\n";
    if (!safety.addSafeGlobals2.empty())
        text += "  allow with (torch 2.x):\n    " + [&] {
            std::string indented = printableLines(safety.addSafeGlobals2);
            for (std::size_t at = 0; (at = indented.find('\n', at)) != std::string::npos; at += 5)
                indented.replace(at, 1, "\n    ");
            return indented;
        }() + "\n";
    return text;
}

void writeSafetyJson(JsonWriter& writer, const SafetyVerdict& safety)
{
    writer.beginObject();
    writer.member("rating", std::string(pickleSafetyName(safety.rating)));
    writer.member("headline", safety.headline);
    writer.key("unsafe").beginArray();
    for (const UnsafeCallable& callable : safety.unsafe) {
        writer.beginObject();
        writer.member("name", callable.name);
        writer.member("known_dangerous", callable.knownDangerous);
        writer.member("reason", callable.reason);
        writer.member("where", callable.where);
        writer.memberOrNull("call", callable.call);
        writer.endObject();
    }
    writer.endArray();
    writer.member("cannot_verify", safety.cannotVerify);
    writer.key("vetted_not_default").beginArray();
    for (const AllowlistCandidate& candidate : safety.allowlist) {
        writer.beginObject();
        writer.member("name", candidate.name);
        writer.member("reason", candidate.reason);
        writer.member("torch_1_13_default", candidate.torch113Default);
        writer.member("torch_2_default", candidate.torch2Default);
        writer.endObject();
    }
    writer.endArray();
    writer.memberOrNull("add_safe_globals_torch2", safety.addSafeGlobals2);
    writer.memberOrNull("add_safe_globals_torch113", safety.addSafeGlobals113);
    writer.member("pickles", safety.pickles);
    writer.key("pickle_bytes").beginArray();
    for (const RatedPickleBytes& rated : safety.pickleBytes) {
        writer.beginObject();
        writer.member("label", rated.label);
        writer.member("length", rated.length);
        writer.member("crc32", static_cast<std::uint64_t>(rated.crc32));
        writer.member("complete", rated.complete);
        writer.endObject();
    }
    writer.endArray();
    writer.member("notes", safety.notes);
    writer.endObject();
}

} // namespace ckpt
