// SPDX-License-Identifier: MIT
// ckpt-inspect targets: described machines saved by name, for --target NAME.
#include "command.h"
#include "terminal.h"

#include "core/devices/deviceinventory.h"

#include <iostream>
#include <memory>

namespace cli {

namespace {

struct TargetsArguments {
    CLI::App* save = nullptr;
    CLI::App* remove = nullptr;
    std::string name, spec;
};

int runTargets(const TargetsArguments& arguments)
{
    ckpt::TargetProfiles profiles;
    if (auto problem = profiles.load()) {
        std::cerr << "ckpt-inspect targets: " << problem->message << "\n";
        return 2;
    }
    if (arguments.save->parsed()) {
        if (auto problem = profiles.set(arguments.name, arguments.spec)) {
            std::cerr << "ckpt-inspect targets: " << problem->message << "\n";
            return kUsageError;
        }
        if (auto problem = profiles.save()) {
            std::cerr << "ckpt-inspect targets: " << problem->message << "\n";
            return 2;
        }
        std::cout << "saved '" << arguments.name << "': " << arguments.spec << "\n";
        return 0;
    }
    if (arguments.remove->parsed()) {
        if (!profiles.remove(arguments.name)) {
            std::cerr << "ckpt-inspect targets: no saved target named '" << arguments.name << "'\n";
            return 2;
        }
        if (auto problem = profiles.save()) {
            std::cerr << "ckpt-inspect targets: " << problem->message << "\n";
            return 2;
        }
        return 0;
    }
    for (const auto& [name, spec] : profiles.profiles()) // `targets` and `targets list`
        std::cout << shown(name) << ": " << shown(spec) << "\n";
    return 0;
}

} // namespace

Command addTargetsCommand(CLI::App& program)
{
    auto arguments = std::make_shared<TargetsArguments>();
    CLI::App* command = program.add_subcommand("targets",
        "Described machines saved by name, for --target NAME; e.g. targets save \"lab box\" "
        "cuda:0=24GiB,cuda:1=24GiB,cpu=64GiB");
    command->require_subcommand(0, 1);
    command->add_subcommand("list", "list the saved targets (the default)");
    arguments->save = command->add_subcommand("save", "save SPEC under NAME");
    arguments->save->add_option("NAME", arguments->name, "the target's name")->type_name("")->required();
    arguments->save->add_option("SPEC", arguments->spec, "e.g. cuda:0=24GiB,cpu=64GiB")
        ->type_name("")
        ->required();
    arguments->remove = command->add_subcommand("remove", "remove the target saved as NAME");
    arguments->remove->add_option("NAME", arguments->name, "the target's name")->type_name("")->required();
    return {command, [arguments] { return runTargets(*arguments); }};
}

} // namespace cli
