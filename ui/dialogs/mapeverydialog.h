// SPDX-License-Identifier: MIT
#pragma once

#include <QDialog>

#include <string>

class QComboBox;

namespace ckpt {

class CheckpointDocument;

// Plan > Map Every Device to…: every storage recorded on one device (of those the file records)
// goes to another (the target's devices, or any tag torch accepts typed in).
class MapEveryDialog : public QDialog {
    Q_OBJECT

public:
    MapEveryDialog(const CheckpointDocument& document, QWidget* parent = nullptr);

    bool hasRecordedDevices() const; // false when no storage of the file records a device
    std::string fromTag() const;
    std::string toTag() const; // as typed, trimmed; the caller checks it is a device tag

private:
    QComboBox* m_from = nullptr;
    QComboBox* m_to = nullptr;
};

} // namespace ckpt
