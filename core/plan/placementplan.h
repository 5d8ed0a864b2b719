// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/expected.h"

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ckpt {

struct Checkpoint;

// One instruction of a placement plan, as a person says it: "map every cuda:1 to cuda:0",
// "put this tensor on the CPU", "put everything under model.layers.3 on cuda:1".
struct PlacementRule {
    enum class Kind { MapTag, MoveTensor, MoveModule };
    Kind kind = Kind::MapTag;
    std::string subject; // MapTag: recorded tag or "*"; MoveTensor: tensor name; MoveModule: name prefix
    std::string target; // device tag, e.g. "cpu", "cuda:0"

    // Parses the command line's FROM=TO, NAME=DEV, PREFIX=DEV (the text after the last '=' is the device).
    static Expected<PlacementRule> parse(Kind kind, const std::string& text);
    std::string describe() const; // "--map cuda:1=cuda:0"
};

// Something whose device a plan decides. A device belongs to a storage, so storages are the
// units; tensors without a storage of their own that still record a device (wrapper subclasses,
// tensors rebuilt from numpy for xla/hpu, torch-format.md §3.1) are units of their own.
// Twelve bytes: the device is an index into the plan's few distinct tags (PlacementPlan::tag()),
// not a string per unit (a million storages made 48 MB of units and 40 MB of planned devices).
struct PlacementUnit {
    std::int32_t storage = -1; // index into Checkpoint::storages, or -1
    std::int32_t tensor = -1; // for storage-less units: index into Checkpoint::tensors
    std::uint32_t recordedTag = 0; // PlacementPlan::tag(recordedTag); 0: no device recorded
};

// What applying one rule did: which units changed, and which tensors moved only because they
// share a storage with a tensor the rule named (the interface must say so before it happens).
struct PlacementChange {
    std::vector<std::uint32_t> unitsChanged;
    std::vector<std::optional<std::string>> previousDevices; // parallel to unitsChanged
    std::vector<std::uint32_t> tensorsNamed; // tensors the rule named (MoveTensor, MoveModule)
    std::vector<std::uint32_t> tensorsDraggedAlong;
    std::vector<std::string> notes; // e.g. "meta tensors hold no data and stay on meta"
};

// A target device for every placement unit, built from rules; later rules win.
class PlacementPlan {
public:
    explicit PlacementPlan(const Checkpoint& checkpoint);

    PlacementChange apply(const PlacementRule& rule);
    // Puts units back where they were (undo): each (unit, device) pair.
    PlacementChange restore(const std::vector<std::pair<std::uint32_t, std::optional<std::string>>>& devices);
    const std::vector<PlacementRule>& rules() const { return m_rules; }

    const std::vector<PlacementUnit>& units() const { return m_units; }
    std::optional<std::string> plannedDevice(std::uint32_t unit) const { return tag(m_planned[unit]); }
    std::optional<std::string> recordedDevice(std::uint32_t unit) const
    {
        return tag(m_units[unit].recordedTag);
    }
    // The distinct devices of the plan, recorded or planned, by index (kNoDeviceTag: none; indices
    // stay valid, tags are only added). Comparing indices compares devices.
    static constexpr std::uint32_t kNoDeviceTag = 0;
    const std::optional<std::string>& tag(std::uint32_t index) const { return m_tags[index]; }
    std::size_t tagCount() const { return m_tags.size(); }
    std::uint32_t plannedTag(std::uint32_t unit) const { return m_planned[unit]; }
    std::uint32_t recordedTag(std::uint32_t unit) const { return m_units[unit].recordedTag; }
    std::optional<std::string> plannedDeviceOfStorage(std::uint32_t storage) const;
    std::optional<std::string> plannedDeviceOfTensor(std::uint32_t tensor) const;
    std::int32_t unitOfStorage(std::uint32_t storage) const;
    std::int32_t unitOfTensor(std::uint32_t tensor) const; // its storage's unit, or its own
    bool changesAnything() const;

    // The plan as torch.load's map_location, when it is a pure tag-to-tag mapping (every unit
    // recorded with tag X goes to the same Y): {"cuda:1": "cuda:0"}. Nothing otherwise.
    std::optional<std::map<std::string, std::string>> asTagMapping() const;
    // A `map_location` dict literal when the plan is a pure mapping, otherwise a short Python
    // snippet that does what the plan says after loading.
    std::string asPython(const std::string& checkpointPath) const;

private:
    std::uint32_t internTag(const std::optional<std::string>& device);
    std::uint32_t internTag(std::string_view device);

    const Checkpoint& m_checkpoint;
    // Unit u < storages.size() is storage u; the storage-less tensors' units follow.
    std::vector<PlacementUnit> m_units;
    std::vector<std::uint32_t> m_planned; // per unit, an index into m_tags
    std::vector<std::int32_t> m_unitOfTensor;
    std::vector<PlacementRule> m_rules;
    // Distinct devices; a deque, so tag() references stay valid as rules add targets.
    std::deque<std::optional<std::string>> m_tags;
    std::unordered_map<std::string, std::uint32_t> m_tagIndex;
    // Tensor indices sorted by name (then index), for name and prefix rules in logarithmic time
    // (the app applies one per drop, on checkpoints of a million tensors).
    std::vector<std::uint32_t> m_sortedTensors;
};

// A device string as torch writes tags: "cuda" stays "cuda", "CUDA:1" is refused, "gpu" is refused.
bool isPlausibleDeviceTag(const std::string& tag);

} // namespace ckpt
