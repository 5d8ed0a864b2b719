// SPDX-License-Identifier: MIT
#pragma once

#include "core/devices/deviceinventory.h"

#include <QDialog>

#include <optional>

class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;

namespace ckpt {

// "Describe a target machine": a spec line ("2xcuda=24GiB,cpu=64GiB") checked as it is typed,
// and the saved profiles (TargetProfiles, shared with the CLI) to pick, save or remove.
class TargetDialog : public QDialog {
    Q_OBJECT

public:
    explicit TargetDialog(QWidget* parent = nullptr);

    void setSpec(const QString& spec);
    QString spec() const;
    // The described machine, when the spec is valid; named after the chosen profile if any.
    std::optional<MachineInventory> machine() const;
    // The saved profile the machine came from, empty if typed.
    QString profileName() const;

private:
    void validate();
    void reloadProfiles();
    void profileSelected();
    void saveProfile();
    void removeProfile();

    TargetProfiles m_profiles;
    QLineEdit* m_specEdit = nullptr;
    QLabel* m_validation = nullptr;
    QListWidget* m_profileList = nullptr;
    QLineEdit* m_nameEdit = nullptr;
    QPushButton* m_saveButton = nullptr;
    QPushButton* m_removeButton = nullptr;
    QPushButton* m_okButton = nullptr;
};

} // namespace ckpt
