// SPDX-License-Identifier: MIT
#pragma once
// What DeviceModel (a list, for the device cards) and MemoryTableModel (a table, for the memory
// chart) share: one row per line of the open document's memory ledger, kept in step with the plan
// (the same devices: dataChanged; a device added or gone: a reset) and the target (a reset), and
// emptied when the document goes away. Written once so that the two views cannot drift apart.
#include "ui/document/checkpointdocument.h"

#include <QAbstractItemModel>
#include <QPointer>

#include <algorithm>
#include <vector>

namespace ckpt {

// ModelBase is QAbstractListModel or QAbstractTableModel; the derived model declares Q_OBJECT.
template<class ModelBase> class LedgerModelBase : public ModelBase {
public:
    void setDocument(CheckpointDocument* document) // nullptr: no rows
    {
        if (document == m_document)
            return;
        this->beginResetModel();
        if (m_document)
            QObject::disconnect(m_document, nullptr, this, nullptr);
        m_document = document;
        m_lines.clear();
        documentReplaced();
        if (m_document) {
            m_lines = m_document->ledger().lines();
            QObject::connect(m_document, &CheckpointDocument::placementChanged, this, [this] { reload(); });
            QObject::connect(m_document, &CheckpointDocument::targetChanged, this, [this] {
                replaceRows(m_document ? m_document->ledger().lines() : std::vector<DeviceLedgerLine> {});
            });
            QObject::connect(m_document, &QObject::destroyed, this, [this] { replaceRows({}); });
        }
        this->endResetModel();
        rowsRefreshed();
    }
    CheckpointDocument* document() const { return m_document; }

    int rowOfTag(const QString& tag) const // -1 when absent
    {
        const std::string wanted = tag.toStdString();
        for (std::size_t i = 0; i < m_lines.size(); ++i)
            if (m_lines[i].tag == wanted)
                return static_cast<int>(i);
        return -1;
    }
    QString tagAt(int row) const
    {
        if (row < 0 || static_cast<std::size_t>(row) >= m_lines.size())
            return {};
        return QString::fromStdString(m_lines[static_cast<std::size_t>(row)].tag);
    }

protected:
    using ModelBase::ModelBase;

    const std::vector<DeviceLedgerLine>& lines() const { return m_lines; }
    int ledgerRowCount(const QModelIndex& parent) const
    {
        return parent.isValid() ? 0 : static_cast<int>(m_lines.size());
    }
    // Hooks: another document (or none) is about to be shown; the rows were refreshed and the
    // model is consistent again.
    virtual void documentReplaced() { }
    virtual void rowsRefreshed() { }

private:
    void reload()
    {
        std::vector<DeviceLedgerLine> lines = m_document->ledger().lines();
        const bool sameDevices = lines.size() == m_lines.size()
            && std::equal(lines.begin(), lines.end(), m_lines.begin(),
                [](const DeviceLedgerLine& a, const DeviceLedgerLine& b) { return a.tag == b.tag; });
        if (!sameDevices) { // a move onto or off a device the target lacks adds or removes its row
            replaceRows(std::move(lines));
            return;
        }
        m_lines = std::move(lines);
        if (!m_lines.empty()) {
            // columnCount is private in QAbstractListModel: asked through the public base.
            const int lastColumn = static_cast<const QAbstractItemModel*>(this)->columnCount() - 1;
            Q_EMIT this->dataChanged(
                this->index(0, 0), this->index(static_cast<int>(m_lines.size()) - 1, lastColumn));
        }
        rowsRefreshed();
    }

    void replaceRows(std::vector<DeviceLedgerLine> lines)
    {
        this->beginResetModel();
        m_lines = std::move(lines);
        this->endResetModel();
        rowsRefreshed();
    }

    QPointer<CheckpointDocument> m_document;
    std::vector<DeviceLedgerLine> m_lines;
};

} // namespace ckpt
