// SPDX-License-Identifier: MIT
#pragma once

#include "core/safety/pickleverdict.h"

#include <QMessageBox>

#include <QObject>
#include <QPointer>
#include <QString>

class QWidget;

namespace ckpt {

struct Checkpoint;
class PlacementPlan;

// The app's side of `ckpt-inspect remap`'s refusal (exit 4), asked before the save job starts: a
// file (or folder) rated dangerous, or that cannot be verified, gets no remapped copy unless the
// person says they trust it. The question and its words come from the save task's judgement
// (core/tasks/savecopy.h, refuseSaveCopy) rendered by core/report/savecopyreport.h, as the CLI
// renders them: both ways out are named (the override, and File > Export Weights… for the weights
// alone). "I trust this file: remap anyway" asks for the save with the override (remapApproved);
// the task then writes the remapped copy and rates it again before its rename. This dialog writes
// nothing itself.
class DangerousSaveGuard : public QObject {
    Q_OBJECT

public:
    explicit DangerousSaveGuard(QWidget* dialogParent);

    // The verdict a save goes by: every shard of a folder, else the file's own bytes.
    static SafetyVerdict rate(const Checkpoint& checkpoint);

    // True when saving `checkpoint` is refused as dangerous without the override: then the dialog
    // "dangerousSaveDialog" is open (window-modal, not blocking), and either remapApproved() or
    // finished(false, ...) follows its answer.
    // `plan`: a run folder's save judges only the files the plan rewrites (savecopy.h).
    bool refuse(const Checkpoint& checkpoint, const QString& outputPath, const PlacementPlan* plan = nullptr);
    QMessageBox* dialog() const { return m_dialog; }

Q_SIGNALS:
    // "I trust this file: remap anyway": run the save task with the override.
    void remapApproved(const QString& outputPath);
    // Not saved (the person declined, or the file cannot be remapped at all), with why.
    void finished(bool ok, const QString& message, const QString& outputPath);

private:
    QWidget* m_dialogParent;
    QPointer<QMessageBox> m_dialog;
};

} // namespace ckpt
