// SPDX-License-Identifier: MIT
#include "core/tasks/valuescan.h"

#include <algorithm>

namespace ckpt {

Finding nonFiniteValuesFinding(const TensorValueStatistics& tensor)
{
    Finding finding(Severity::Warning, FindingCode::ValuesNonfinite,
        "tensor '" + tensor.name + "' holds " + std::to_string(tensor.nanCount) + " NaN, "
            + std::to_string(tensor.positiveInfinityCount) + " +Inf and "
            + std::to_string(tensor.negativeInfinityCount) + " -Inf of its " + std::to_string(tensor.count)
            + " values");
    finding.tensors.push_back(tensor.index);
    finding.explanation
        = "A model with NaN or infinite weights produces NaN outputs: training diverged before this "
          "checkpoint was saved, or the values were damaged afterwards.";
    finding.fix
        = "Go back to an earlier checkpoint, or lower the learning rate and check the loss scaling; a CRC "
          "mismatch finding would mean the file itself was damaged.";
    return finding;
}

ValueScanOutcome scanValues(const ValueScanRequest& request)
{
    ValueScanOutcome outcome;
    outcome.path = request.path;
    const ValuesHelper helper = request.helper ? *request.helper : findValuesHelper();
    if (!helper) {
        outcome.problem = "value statistics need " + helper.problem;
        return outcome;
    }
    std::vector<std::string> arguments;
    if (request.onlyTensor)
        arguments.push_back("--tensor=" + std::to_string(*request.onlyTensor));
    if (request.progress && !request.onlyTensor)
        arguments.emplace_back("--progress"); // one tensor: `progress` only cancels
    if (request.recordCrcs)
        arguments.emplace_back("--crc");
    arguments.push_back(request.path);
    std::size_t scanned = 0, withoutValues = 0;
    const auto keep = [&](const TensorValueStatistics& tensor) {
        ++scanned;
        withoutValues += tensor.computed() ? 0 : 1;
        return request.keepEveryTensor || !tensor.computed() || tensor.nonFiniteCount() > 0;
    };
    auto answer = runValuesHelper(helper, arguments, {}, request.progress, keep);
    if (!answer) {
        outcome.problem = answer.error().message;
        return outcome;
    }
    if (answer->cancelled) {
        outcome.cancelled = true;
        return outcome;
    }
    outcome.tensors = std::move(answer->tensors);
    outcome.recordCrcs = std::move(answer->recordCrcs);
    outcome.tensorsScanned = scanned;
    outcome.tensorsWithoutValues = withoutValues;
    for (std::size_t t = 0; t < outcome.tensors.size(); ++t)
        if (outcome.tensors[t].computed() && outcome.tensors[t].nonFiniteCount() > 0)
            outcome.nonFinite.push_back(t);
    std::stable_sort(outcome.nonFinite.begin(), outcome.nonFinite.end(), [&](std::size_t x, std::size_t y) {
        return outcome.tensors[x].nonFiniteCount() > outcome.tensors[y].nonFiniteCount();
    });
    for (std::size_t t : outcome.nonFinite)
        outcome.findings.push_back(nonFiniteValuesFinding(outcome.tensors[t]));
    return outcome;
}

} // namespace ckpt
