// SPDX-License-Identifier: MIT
// Globals that moved between library versions: a pickle names a class where the version that
// wrote it kept it, and an environment with another version cannot import it. The copy written
// by `remap --rename-global` names it where the reader's version keeps it.
#include "core/triage/globalmoves.h"

#include "core/model/checkpoint.h"

#include <map>
#include <set>
#include <stdexcept>

namespace ckpt {

namespace {

struct KnownMove {
    const char* from; // module path as the pickle names it
    const char* to; // where the other version keeps it
    const char* why;
    const char* error; // what the other environment says, as Python prints it
};

// Each move is known in both directions where both versions are in use.
const KnownMove kMoves[] = {
    {"numpy._core", "numpy.core",
        "NumPy 2 pickles its arrays and scalars as numpy._core.*; NumPy 1.x has no numpy._core (NumPy 2 "
        "still "
        "reads numpy.core.*)",
        "ModuleNotFoundError: No module named 'numpy._core'"},
    {"numpy.core", "numpy._core",
        "NumPy 1.x pickles its arrays and scalars as numpy.core.*, which NumPy 2 reads only through a "
        "deprecated alias (DeprecationWarning: numpy.core is deprecated)",
        ""},
    {"pytorch_lightning", "lightning.pytorch",
        "Lightning 2 moved pytorch_lightning to lightning.pytorch; an environment with only the lightning "
        "package cannot import the old path",
        "ModuleNotFoundError: No module named 'pytorch_lightning'"},
};

bool underModule(const std::string& module, const std::string& prefix)
{
    return module == prefix
        || (module.size() > prefix.size() && module.starts_with(prefix) && module[prefix.size()] == '.');
}

} // namespace

std::vector<Finding> checkKnownGlobalMoves(const Checkpoint& checkpoint)
{
    if (checkpoint.graph.released())
        throw std::logic_error("checkKnownGlobalMoves: the pickle graph was released before it was judged");
    std::map<const KnownMove*, std::set<std::string>> found;
    for (NodeId id = 0; id < checkpoint.graph.size(); ++id) {
        if (checkpoint.graph.kind(id) != NodeKind::Global)
            continue;
        const std::string module(checkpoint.graph.module(id));
        for (const KnownMove& move : kMoves)
            if (underModule(module, move.from)) {
                found[&move].insert(checkpoint.graph.qualifiedName(id));
                break;
            }
    }
    std::vector<Finding> findings;
    const std::string file = checkpoint.path.empty() ? std::string("FILE") : checkpoint.path;
    for (const auto& [move, globals] : found) {
        std::string names;
        for (const std::string& name : globals)
            names += (names.empty() ? "" : ", ") + name;
        Finding finding(Severity::Info, FindingCode::GlobalMoved,
            std::string("the file names ") + names + ", which another version keeps under " + move->to);
        finding.explanation = std::string(move->why)
            + (move->error[0] ? std::string("; loading it there fails with ") + move->error : std::string());
        finding.fix = "write a copy that names them where that version keeps them: ckpt-inspect remap " + file
            + " -o OUT --rename-global " + move->from + "=" + move->to;
        findings.push_back(std::move(finding));
    }
    return findings;
}

} // namespace ckpt
