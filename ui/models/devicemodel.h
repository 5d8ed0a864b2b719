// SPDX-License-Identifier: MIT
#pragma once

#include "ui/models/ledgermodelbase.h"

#include <QAbstractListModel>
#include <QColor>

#include <optional>
#include <vector>

class QMimeData;
class QPalette;

namespace ckpt {

// The devices a plan can put storages on, one row per line of the document's memory ledger: the
// target machine's devices first, then devices only the file names. Tensors and modules dragged
// out of the tree (kPlacementMimeType) can be dropped onto a row; the drop is one undoable move.
class DeviceModel : public LedgerModelBase<QAbstractListModel> {
    Q_OBJECT

public:
    enum Role {
        TagRole = Qt::UserRole + 1, // QString, "cuda:1"
        NameRole, // QString, "NVIDIA H200"
        CapacityRole, // qulonglong bytes, invalid when the device's capacity is unknown
        PlannedBytesRole, // qulonglong
        RecordedBytesRole, // qulonglong
        ContextBytesRole, // qulonglong, the assumed CUDA context
        HeadroomRole, // qlonglong, negative when over capacity
        OverCapacityRole, // bool
        InTargetRole, // bool: the target machine has this device
        StorageCountRole, // qulonglong
        RecordsNoDeviceRole, // bool: the "(none)" card, storages the file records no device for
    };

    explicit DeviceModel(CheckpointDocument* document, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    QHash<int, QByteArray> roleNames() const override;

    QStringList mimeTypes() const override;
    Qt::DropActions supportedDropActions() const override;
    bool canDropMimeData(const QMimeData* data, Qt::DropAction action, int row, int column,
        const QModelIndex& parent) const override;
    bool dropMimeData(const QMimeData* data, Qt::DropAction action, int row, int column,
        const QModelIndex& parent) override;

    MoveReport lastMoveReport() const { return m_lastMoveReport; }

    // The move a drop of `data` onto `tag` makes, shared by every drop target (cards, chart bars):
    // nothing when the data names nothing.
    static std::optional<MoveReport> dropOnDevice(
        CheckpointDocument* document, const QMimeData* data, const QString& tag);
    // "Move model.layers.1 to cpu", "Move 3 items to cuda:0".
    static QString moveDescription(const std::vector<PlacementRule>& rules, const QString& tag);

Q_SIGNALS:
    void moved(const QString& statusText); // after a drop, for the status bar

private:
    void documentReplaced() override { m_lastMoveReport = {}; }
    // Which device a drop means: onto an item, or (between items) the row it was dropped at.
    int dropRow(int row, const QModelIndex& parent) const;

    MoveReport m_lastMoveReport;
};

// Shared by the device views (cards and chart).
QString formatByteSize(std::uint64_t bytes); // "3.20 GiB"
QColor overCapacityColor(const QPalette& palette); // readable on the palette's base colour

} // namespace ckpt
