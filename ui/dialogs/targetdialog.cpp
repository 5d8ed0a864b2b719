// SPDX-License-Identifier: MIT
#include "ui/dialogs/targetdialog.h"

#include "core/model/checkpoint.h"

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>

namespace ckpt {

TargetDialog::TargetDialog(QWidget* parent)
    : QDialog(parent)
{
    setObjectName(QStringLiteral("targetDialog"));
    setWindowTitle(tr("Describe a Target Machine"));

    auto* intro = new QLabel(tr("Describe the machine the checkpoint should load on: devices with their "
                                "memory, e.g. <tt>cuda:0=24GiB,cuda:1=24GiB,cpu=64GiB</tt>, "
                                "<tt>2xcuda=80GiB,cpu=256GiB</tt> or <tt>mps=32GB</tt>."),
        this);
    intro->setWordWrap(true);

    m_specEdit = new QLineEdit(this);
    m_specEdit->setObjectName(QStringLiteral("specEdit"));
    m_specEdit->setPlaceholderText(QStringLiteral("2xcuda=24GiB,cpu=64GiB"));
    m_specEdit->setAccessibleName(tr("Machine spec"));
    m_validation = new QLabel(this);
    m_validation->setObjectName(QStringLiteral("specValidation"));
    m_validation->setWordWrap(true);
    m_validation->setTextInteractionFlags(Qt::TextSelectableByMouse);

    m_profileList = new QListWidget(this);
    m_profileList->setObjectName(QStringLiteral("profileList"));
    m_profileList->setAccessibleName(tr("Saved target machines"));
    m_profileList->setToolTip(tr("Saved targets, shared with the ckpt-inspect command line (targets.json)"));

    m_nameEdit = new QLineEdit(this);
    m_nameEdit->setObjectName(QStringLiteral("profileNameEdit"));
    m_nameEdit->setPlaceholderText(tr("name, e.g. lab box"));
    m_saveButton = new QPushButton(tr("&Save as profile"), this);
    m_removeButton = new QPushButton(tr("&Remove profile"), this);

    auto* form = new QFormLayout;
    form->addRow(tr("&Spec:"), m_specEdit);
    form->addRow(QString(), m_validation);
    auto* saveRow = new QHBoxLayout;
    saveRow->addWidget(m_nameEdit, 1);
    saveRow->addWidget(m_saveButton);
    saveRow->addWidget(m_removeButton);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    m_okButton = buttons->button(QDialogButtonBox::Ok);
    m_okButton->setText(tr("Use this target"));
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(intro);
    layout->addLayout(form);
    layout->addWidget(new QLabel(tr("Saved profiles:"), this));
    layout->addWidget(m_profileList, 1);
    layout->addLayout(saveRow);
    layout->addWidget(buttons);

    connect(m_specEdit, &QLineEdit::textChanged, this, &TargetDialog::validate);
    connect(m_profileList, &QListWidget::currentRowChanged, this, &TargetDialog::profileSelected);
    connect(m_profileList, &QListWidget::itemDoubleClicked, this, [this] {
        if (machine())
            accept();
    });
    connect(m_saveButton, &QPushButton::clicked, this, &TargetDialog::saveProfile);
    connect(m_removeButton, &QPushButton::clicked, this, &TargetDialog::removeProfile);
    connect(m_nameEdit, &QLineEdit::textChanged, this, &TargetDialog::validate);

    reloadProfiles();
    validate();
    resize(520, 400);
}

void TargetDialog::setSpec(const QString& spec)
{
    m_specEdit->setText(spec);
}

QString TargetDialog::spec() const
{
    return m_specEdit->text().trimmed();
}

QString TargetDialog::profileName() const
{
    const QListWidgetItem* item = m_profileList->currentItem();
    if (!item)
        return {};
    const QString name = item->data(Qt::UserRole).toString();
    // Only when the spec is still the profile's.
    const auto saved = m_profiles.find(name.toStdString());
    return saved && QString::fromStdString(*saved) == spec() ? name : QString();
}

std::optional<MachineInventory> TargetDialog::machine() const
{
    const QString name = profileName();
    auto parsed
        = parseMachineSpec(spec().toStdString(), name.isEmpty() ? "described machine" : name.toStdString());
    if (!parsed)
        return std::nullopt;
    return std::move(parsed.value());
}

void TargetDialog::validate()
{
    const QString text = spec();
    bool valid = false;
    if (text.isEmpty()) {
        m_validation->setText(tr("Type a spec or pick a saved profile."));
    } else {
        const auto parsed = parseMachineSpec(text.toStdString());
        if (parsed) {
            valid = true;
            QStringList devices;
            for (const DeviceInfo& device : parsed->devices)
                devices.append(QStringLiteral("%1 %2").arg(QString::fromStdString(device.tag),
                    QString::fromStdString(formatBytes(device.totalBytes))));
            m_validation->setText(QStringLiteral("✓ ") + devices.join(QStringLiteral(", ")));
        } else {
            m_validation->setText(QStringLiteral("✗ ") + QString::fromStdString(parsed.error().message));
        }
    }
    // A colour that reads on dark and light palettes alike.
    QPalette palette = m_validation->palette();
    palette.setColor(QPalette::WindowText,
        valid || text.isEmpty() ? this->palette().color(QPalette::WindowText) : QColor(0xd3, 0x3f, 0x2f));
    m_validation->setPalette(palette);
    m_okButton->setEnabled(valid);
    m_saveButton->setEnabled(valid && !m_nameEdit->text().trimmed().isEmpty());
    m_removeButton->setEnabled(m_profileList->currentItem() != nullptr);
}

void TargetDialog::reloadProfiles()
{
    if (const Status status = m_profiles.load())
        m_validation->setText(QString::fromStdString(status->message));
    m_profileList->clear();
    for (const auto& [name, spec] : m_profiles.profiles()) {
        auto* item = new QListWidgetItem(
            QStringLiteral("%1 — %2").arg(QString::fromStdString(name), QString::fromStdString(spec)),
            m_profileList);
        item->setData(Qt::UserRole, QString::fromStdString(name));
    }
}

void TargetDialog::profileSelected()
{
    if (const QListWidgetItem* item = m_profileList->currentItem()) {
        const QString name = item->data(Qt::UserRole).toString();
        if (const auto saved = m_profiles.find(name.toStdString())) {
            m_nameEdit->setText(name);
            m_specEdit->setText(QString::fromStdString(*saved));
        }
    }
    validate();
}

void TargetDialog::saveProfile()
{
    const QString name = m_nameEdit->text().trimmed();
    Status status = m_profiles.set(name.toStdString(), spec().toStdString());
    if (!status)
        status = m_profiles.save();
    if (status) {
        m_validation->setText(QStringLiteral("✗ ") + QString::fromStdString(status->message));
        return;
    }
    reloadProfiles();
    for (int i = 0; i < m_profileList->count(); ++i)
        if (m_profileList->item(i)->data(Qt::UserRole).toString() == name)
            m_profileList->setCurrentRow(i);
    validate();
}

void TargetDialog::removeProfile()
{
    const QListWidgetItem* item = m_profileList->currentItem();
    if (!item)
        return;
    m_profiles.remove(item->data(Qt::UserRole).toString().toStdString());
    if (const Status status = m_profiles.save())
        m_validation->setText(QStringLiteral("✗ ") + QString::fromStdString(status->message));
    reloadProfiles();
    validate();
}

} // namespace ckpt
