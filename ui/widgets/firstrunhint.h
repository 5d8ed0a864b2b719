// SPDX-License-Identifier: MIT
#pragma once

#include <QFrame>

class QLabel;
class QToolButton;

namespace ckpt {

// A short first-run hint above the tree: what to do first, and where the tour is. Closing
// it emits dismissed(); the window remembers that (AppSettings::firstRunHintDismissed).
class FirstRunHint : public QFrame {
    Q_OBJECT

public:
    explicit FirstRunHint(QWidget* parent = nullptr);
    QString text() const;

Q_SIGNALS:
    void dismissed();

protected:
    void changeEvent(QEvent* event) override;

private:
    void restyle();
    QLabel* m_label = nullptr;
    QToolButton* m_close = nullptr;
};

} // namespace ckpt
