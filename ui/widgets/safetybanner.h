// SPDX-License-Identifier: MIT
#pragma once

#include "core/safety/pickleverdict.h"
#include "ui/widgets/onelinebanner.h"

namespace ckpt {

// The safety verdict above the tree, where a person looks first, in one line: the rating and the
// first callable that would run, "details…" for the rest (every callable, what cannot be verified,
// the allowlist call). Red for a file whose pickles would run code (or cannot be verified), amber
// when only vetted classes need allowlisting, green for known inert; hidden when the file holds no
// pickle.
class SafetyBanner : public OneLineBanner {
    Q_OBJECT

public:
    explicit SafetyBanner(QWidget* parent = nullptr);

    void setChecking(); // while the verdict is being computed
    void setVerdict(const SafetyVerdict& verdict);
    void clear();

    PickleSafety rating() const { return m_rating; }

private:
    PickleSafety m_rating = PickleSafety::NoPickle;
};

} // namespace ckpt
