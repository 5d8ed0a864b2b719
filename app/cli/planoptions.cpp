#include "planoptions.h"

#include "core/model/checkpoint.h"

#include <iostream>

namespace cli {

bool PlanOptions::consume(const std::vector<std::string>& args, std::size_t& i, const std::string& command,
    std::optional<std::string>& error)
{
    using Kind = ckpt::PlacementRule::Kind;
    const std::string& arg = args[i];
    Kind kind;
    if (arg == "--map")
        kind = Kind::MapTag;
    else if (arg == "--tensor")
        kind = Kind::MoveTensor;
    else if (arg == "--module")
        kind = Kind::MoveModule;
    else
        return false;
    if (i + 1 >= args.size()) {
        error = "ckpt-inspect " + command + ": " + arg + " needs a value";
        return true;
    }
    auto rule = ckpt::PlacementRule::parse(kind, args[++i]);
    if (!rule) {
        error = "ckpt-inspect " + command + ": " + arg + " " + rule.error().message;
        return true;
    }
    rules.push_back(*rule);
    return true;
}

bool PlanOptions::apply(
    const ckpt::Checkpoint& checkpoint, ckpt::PlacementPlan& plan, const std::string& command) const
{
    for (const ckpt::PlacementRule& rule : rules) {
        const ckpt::PlacementChange change = plan.apply(rule);
        if (rule.kind != ckpt::PlacementRule::Kind::MapTag && change.tensorsNamed.empty()) {
            std::cerr << "ckpt-inspect " << command << ": " << rule.describe()
                      << ": the checkpoint has no tensor "
                      << (rule.kind == ckpt::PlacementRule::Kind::MoveTensor ? "named '" : "under '")
                      << rule.subject << "'\n";
            return false;
        }
        for (const std::string& note : change.notes)
            std::cerr << "note: " << rule.describe() << ": " << note << "\n";
        if (!change.tensorsDraggedAlong.empty()) {
            std::cerr << "note: " << rule.describe() << " also moves " << change.tensorsDraggedAlong.size()
                      << " tensor(s) that share a storage with it:";
            for (std::size_t k = 0; k < change.tensorsDraggedAlong.size() && k < 5; ++k)
                std::cerr << " " << checkpoint.tensors[change.tensorsDraggedAlong[k]].name;
            std::cerr << (change.tensorsDraggedAlong.size() > 5 ? " ...\n" : "\n");
        }
    }
    return true;
}

} // namespace cli
