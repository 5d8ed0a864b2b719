// SPDX-License-Identifier: MIT
#include "core/write/readbackverifier.h"

#include <memory>

namespace ckpt {

namespace {

std::unique_ptr<ReadBackFaultForTesting>& faultInForce()
{
    static std::unique_ptr<ReadBackFaultForTesting> fault;
    return fault;
}

} // namespace

ScopedReadBackFault::ScopedReadBackFault(ReadBackFaultForTesting fault)
{
    faultInForce() = std::make_unique<ReadBackFaultForTesting>(std::move(fault));
}

ScopedReadBackFault::~ScopedReadBackFault()
{
    faultInForce().reset();
}

const ReadBackFaultForTesting* readBackFaultForTesting()
{
    return faultInForce().get();
}

std::vector<std::int64_t> contiguousStrides(const std::vector<std::int64_t>& shape)
{
    std::vector<std::int64_t> stride(shape.size(), 1);
    for (std::size_t d = shape.size(); d-- > 1;)
        stride[d - 1] = stride[d] * std::max<std::int64_t>(shape[d], 1);
    return stride;
}

} // namespace ckpt
