// SPDX-License-Identifier: MIT
#pragma once

#include "core/triage/pickleverdict.h"

#include <QMessageBox>

#include <QObject>
#include <QPointer>
#include <QString>

class QWidget;

namespace ckpt {

struct Checkpoint;

// The app's side of `ckpt-inspect remap`'s refusal (exit 4): a file whose pickle the safety verdict
// rates dangerous, or cannot verify, gets no remapped copy, since a copy would carry the same code
// (and a rewritten pickle would only launder it). The dialog says why and offers what
// --allow-dangerous does: the file copied byte for byte, nothing remapped, still dangerous.
class DangerousSaveGuard : public QObject {
    Q_OBJECT

public:
    explicit DangerousSaveGuard(QWidget* dialogParent);

    // The verdict a save goes by: every shard of a folder, else the file's own bytes.
    static SafetyVerdict rate(const Checkpoint& checkpoint);

    // True when `checkpoint` may not be remapped: then the dialog "dangerousSaveDialog" is open
    // (window-modal, not blocking) and finished() follows its answer.
    bool refuse(const Checkpoint& checkpoint, const QString& outputPath);
    QMessageBox* dialog() const { return m_dialog; }

    // Copies `checkpoint`'s file to `outputPath` byte for byte (never over the input; atomically),
    // rated again before it is given its name. An error message, or empty on success.
    static QString copyUnchanged(
        const Checkpoint& checkpoint, const QString& outputPath, const SafetyVerdict& verdict);

Q_SIGNALS:
    // ok: the byte-for-byte copy was written; otherwise refused (or the copy failed), with why.
    void finished(bool ok, const QString& message, const QString& outputPath);

private:
    QWidget* m_dialogParent;
    QPointer<QMessageBox> m_dialog;
};

} // namespace ckpt
