// SPDX-License-Identifier: MIT
#pragma once

#include "core/triage/pickleverdict.h"

#include <QFrame>

class QLabel;

namespace ckpt {

// The safety verdict above the tree, where a person looks first: red for a file whose pickles would
// run code (or cannot be verified), amber when only vetted classes need allowlisting, green for
// known inert; hidden when the file holds no pickle.
class SafetyBanner : public QFrame {
    Q_OBJECT

public:
    explicit SafetyBanner(QWidget* parent = nullptr);

    void setChecking(); // while the verdict is being computed
    void setVerdict(const SafetyVerdict& verdict);
    void clear();

    PickleSafety rating() const { return m_rating; }
    QString text() const; // plain text, for tests and accessibility

private:
    void present(const QString& background, const QString& border, const QString& html);

    QLabel* m_label = nullptr;
    PickleSafety m_rating = PickleSafety::NoPickle;
};

} // namespace ckpt
