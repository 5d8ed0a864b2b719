// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/bytes.h"
#include "core/pickle/picklegraph.h"
#include "core/pickle/picklemachine.h"

namespace ckpt {

// The pickle as Python 3.11's _pickle reads it from a file object without peek() (an io.BytesIO,
// which torch.load makes of a zip's data.pkl). _pickle reads a FRAME's bytes into its buffer and,
// when an opcode needs more bytes than the buffer has left, drops the rest and reads them from the
// file after the frame. Where every opcode ends inside its frame this is the pickle the machine
// reads; a FRAME shorter than its opcodes makes _pickle read on from other bytes (pickle.py and
// Python 3.14's _pickle stop there instead: "pickle exhausted before end of frame"). The verdict
// reads such pickles both ways.
PickleRun runAsPython311FileBuffer(ByteView data, PickleGraph& graph, const PickleLimits& limits = {});

} // namespace ckpt
