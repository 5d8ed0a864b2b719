// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/finding.h"

#include <QAbstractTableModel>
#include <QList>
#include <QPixmap>

#include <cstdint>
#include <memory>
#include <vector>

namespace ckpt {

struct Checkpoint;

// The marker of a finding's severity, drawn (not a theme icon, so it looks the same everywhere):
// a red disc with a cross for errors, an amber triangle with "!" for warnings, a blue disc with
// "i" for remarks. `faint` draws it pale, for rows that only contain rows with findings.
QPixmap severityBadge(Severity severity, int logicalSize, bool faint = false);
QString severityText(Severity severity); // "Error", "Warning", "Info"

// The findings of a triage as a flat table: one row per finding (severity, code, message, what it
// concerns). Tensor names are looked up in the checkpoint the findings came from, which the model
// keeps alive. Sort through a QSortFilterProxyModel on SortRole.
class FindingsModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column { SeverityColumn, CodeColumn, MessageColumn, ConcernsColumn, ColumnCount };
    enum Role {
        SortRole = Qt::UserRole + 1, // int severity rank (errors first), tensor count, or text
        SeverityRole, // int: ckpt::Severity
        TensorsRole, // QList<uint>: indices into Checkpoint::tensors
        ExplanationRole, // QString
        FixRole, // QString
        RecordRole, // QString
    };

    explicit FindingsModel(QObject* parent = nullptr);
    ~FindingsModel() override;

    // Replaces the findings; `checkpoint` names their tensors (may be null: indices are shown).
    void setFindings(std::vector<Finding> findings, std::shared_ptr<const Checkpoint> checkpoint);
    void clear();
    const std::vector<Finding>& findings() const { return m_findings; }
    const Finding* findingAt(int row) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;

private:
    QString concernsText(const Finding& finding) const;
    QString tooltip(const Finding& finding) const;

    std::vector<Finding> m_findings;
    std::shared_ptr<const Checkpoint> m_checkpoint;
};

} // namespace ckpt
