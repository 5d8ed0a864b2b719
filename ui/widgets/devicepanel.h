// SPDX-License-Identifier: MIT
#pragma once

#include <QHash>
#include <QRect>
#include <QWidget>

class QAbstractItemView;
class QLabel;
class QListView;

namespace ckpt {

class CheckpointDocument;
class DeviceModel;

// The device cards: one per device of the target machine (and per device only the file names),
// each with its capacity and a bar of the bytes planned onto it. Tensors and modules dropped onto
// a card are planned onto that device, through DeviceModel::dropMimeData (one undoable step).
class DevicePanel : public QWidget {
    Q_OBJECT

public:
    explicit DevicePanel(CheckpointDocument* document, QWidget* parent = nullptr);

    QAbstractItemView* view() const; // the view that takes drops
    DeviceModel* model() const { return m_model; }
    QRect cardRect(const QString& tag) const; // in view()->viewport() coordinates; empty if absent
    void setDocument(CheckpointDocument* document); // nullptr: an empty panel
    // "Detecting GPUs…" above the cards while this machine's GPUs are not known yet.
    void setDetecting(bool detecting);
    bool isDetecting() const;
    // The card's tooltip: exact bytes, headroom, and for a device the target lacks what loading does.
    QString cardToolTip(int row) const;
    // What torch 2.6+ raises restoring onto each device of the plan the target lacks (by tag).
    QHash<QString, QString> absentDeviceOutcomes() const { return m_absentOutcomes; }

    // Tall enough for every row of cards (up to four rows), so no card hides behind a scroll bar.
    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

Q_SIGNALS:
    void moved(const QString& statusText); // after a drop, for the status bar
    void heightChanged(
        int height); // the height every row of cards needs changed (a new width or device count)

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void refreshFit();
    void refreshAbsentOutcomes();

    QHash<QString, QString> m_absentOutcomes;
    DeviceModel* m_model = nullptr;
    QListView* m_view = nullptr;
    QLabel* m_detectingLabel = nullptr;
};

} // namespace ckpt
