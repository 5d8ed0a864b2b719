// SPDX-License-Identifier: MIT
// A test-only probe for tests/tools/pickle_differential.py: for each raw pickle file named on the
// command line (or one per line on stdin with "-"), one JSON line with what the pickle machine made
// of it (read to STOP or not, why, every GLOBAL it saw and every extension code) and what the safety
// verdict says of the file. Names are hex-encoded bytes, so no text escaping can blur a
// comparison with what CPython's find_class received.
#include "core/pickle/bufferedframes.h"
#include "core/pickle/picklegraph.h"
#include "core/pickle/picklemachine.h"
#include "core/safety/pickleverdict.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

namespace {

std::string hex(std::string_view bytes)
{
    static const char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (const char c : bytes) {
        const auto byte = static_cast<unsigned char>(c);
        out += digits[byte >> 4];
        out += digits[byte & 15];
    }
    return out;
}

std::string jsonText(std::string_view text)
{
    std::string out = "\"";
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (byte < 0x20 || byte >= 0x7f) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\u%04x", byte);
            out += escaped;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

void probe(const std::string& path)
{
    std::ifstream file(path, std::ios::binary);
    const ckpt::ByteBuffer bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    const ckpt::ByteView view(bytes.data(), bytes.size());
    ckpt::PickleGraph graph;
    ckpt::PickleRun run = ckpt::PickleMachine().run(view, graph);
    // And as Python 3.11's _pickle reads a BytesIO (bufferedframes.h): the globals of both.
    ckpt::PickleGraph bufferedGraph;
    const ckpt::PickleRun buffered = ckpt::runAsPython311FileBuffer(view, bufferedGraph);
    const bool bufferedComplete = buffered.complete();
    run.globals.insert(run.globals.end(), buffered.globals.begin(), buffered.globals.end());
    const ckpt::SafetyVerdict verdict = ckpt::ratePickleSafety(view);

    std::string line = "{\"file\":" + jsonText(path) + ",\"complete\":" + (run.complete() ? "true" : "false")
        + ",\"limit\":" + (run.stoppedAtLimit ? "true" : "false")
        + ",\"error\":" + jsonText(run.error.value_or("")) + ",\"end\":" + std::to_string(run.endOffset)
        + ",\"frame\":" + (run.opcodesSeen.test(0x95) ? "true" : "false")
        + ",\"buffered_complete\":" + (bufferedComplete ? "true" : "false") + ",\"globals\":[";
    for (std::size_t i = 0; i < run.globals.size(); ++i)
        line
            += (i ? ",[\"" : "[\"") + hex(run.globals[i].module) + "\",\"" + hex(run.globals[i].name) + "\"]";
    line += "],\"ext\":[";
    bool first = true;
    for (const ckpt::PickleGraph* g : {&graph, &bufferedGraph})
        for (ckpt::NodeId id = 0; id < g->size(); ++id)
            if (g->kind(id) == ckpt::NodeKind::Extension) {
                line += (first ? "" : ",") + std::to_string(g->node(id).value);
                first = false;
            }
    line += "],\"rating\":" + jsonText(ckpt::pickleSafetyName(verdict.rating)) + ",\"unsafe\":[";
    for (std::size_t i = 0; i < verdict.unsafe.size(); ++i)
        line += (i ? "," : "") + jsonText(verdict.unsafe[i].name);
    line += "],\"cannot_verify\":[";
    for (std::size_t i = 0; i < verdict.cannotVerify.size(); ++i)
        line += (i ? "," : "") + jsonText(verdict.cannotVerify[i]);
    line += "],\"headline\":" + jsonText(verdict.headline) + "}";
    std::cout << line << '\n';
}

} // namespace

int main(int argc, char** argv)
{
    std::ios::sync_with_stdio(false);
    for (int i = 1; i < argc; ++i) {
        if (std::string(argv[i]) == "-") {
            std::string path;
            while (std::getline(std::cin, path))
                if (!path.empty())
                    probe(path);
        } else {
            probe(argv[i]);
        }
    }
    std::cout.flush();
    return 0;
}
