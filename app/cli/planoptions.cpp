// SPDX-License-Identifier: MIT
#include "planoptions.h"
#include "terminal.h"

#include "core/model/checkpoint.h"

#include <iostream>

namespace cli {

void PlanOptions::addTo(CLI::App& command)
{
    using Kind = ckpt::PlacementRule::Kind;
    const struct {
        const char* name;
        Kind kind;
        const char* valueName;
        const char* description;
    } options[] = {
        {"--map", Kind::MapTag, "FROM=TO", "record storages saved on FROM (a device, or *) on TO"},
        {"--tensor", Kind::MoveTensor, "NAME=DEV",
            "record the storage of tensor NAME on DEV (every tensor sharing it moves too)"},
        {"--module", Kind::MoveModule, "PREFIX=DEV", "record every tensor under PREFIX on DEV"},
    };
    for (const auto& option : options) {
        const std::string name = option.name;
        const Kind kind = option.kind;
        command
            .add_option_function<std::string>(
                name,
                [this, name, kind](const std::string& value) {
                    auto rule = ckpt::PlacementRule::parse(kind, value);
                    if (!rule)
                        throw CLI::ValidationError(name, rule.error().message);
                    rules.push_back(*rule);
                },
                std::string(option.description) + "; repeatable, later rules win")
            ->type_name(option.valueName)
            ->trigger_on_parse()
            ->group("Placement");
    }
}

bool PlanOptions::apply(
    const ckpt::Checkpoint& checkpoint, ckpt::PlacementPlan& plan, const std::string& command) const
{
    for (const ckpt::PlacementRule& rule : rules) {
        const ckpt::PlacementChange change = plan.apply(rule);
        if (rule.kind != ckpt::PlacementRule::Kind::MapTag && change.tensorsNamed.empty()) {
            std::cerr << "ckpt-inspect " << command << ": " << shown(rule.describe())
                      << ": the checkpoint has no tensor "
                      << (rule.kind == ckpt::PlacementRule::Kind::MoveTensor ? "named '" : "under '")
                      << shown(rule.subject) << "'\n";
            return false;
        }
        for (const std::string& note : change.notes)
            std::cerr << "note: " << shown(rule.describe()) << ": " << shown(note) << "\n";
        if (!change.tensorsDraggedAlong.empty()) {
            std::cerr << "note: " << shown(rule.describe()) << " also moves "
                      << change.tensorsDraggedAlong.size() << " tensor(s) that share a storage with it:";
            for (std::size_t k = 0; k < change.tensorsDraggedAlong.size() && k < 5; ++k)
                std::cerr << " " << shown(checkpoint.tensors[change.tensorsDraggedAlong[k]].name);
            std::cerr << (change.tensorsDraggedAlong.size() > 5 ? " ...\n" : "\n");
        }
    }
    return true;
}

} // namespace cli
