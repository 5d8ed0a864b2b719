// SPDX-License-Identifier: MIT
#pragma once

#include <QPoint>
#include <QWidget>

class QBarCategoryAxis;
class QBarSeries;
class QCategoryAxis;
class QChart;
class QChartView;
class QGraphicsRectItem;
class QLabel;
class QMimeData;
class QLogValueAxis;
class QIdentityProxyModel;
class QVBarModelMapper;

namespace ckpt {

class CheckpointDocument;
class MemoryTableModel;

// The memory chart: per device, bytes as recorded, as planned, the assumed CUDA context and the
// capacity, as grouped bars read from a MemoryTableModel through a QVBarModelMapper. Every piece of
// Qt Charts code lives in this class. Tensors dropped onto a device's bars are planned onto it.
class MemoryChartWidget : public QWidget {
    Q_OBJECT

public:
    explicit MemoryChartWidget(CheckpointDocument* document, QWidget* parent = nullptr);
    ~MemoryChartWidget() override;

    void setDocument(CheckpointDocument* document); // nullptr: an empty chart
    QChartView* chartView() const;
    MemoryTableModel* model() const { return m_model; }

    // The device whose bars are at `position` (chartView()->viewport() coordinates), or empty.
    QString tagAt(const QPoint& position) const;
    // The middle of a device's bar group, in chartView()->viewport() coordinates (for tests).
    QPoint categoryCenter(const QString& tag) const;

Q_SIGNALS:
    void moved(const QString& statusText); // after a drop, for the status bar

protected:
    void changeEvent(QEvent* event) override;

private:
    friend class MemoryChartView;
    void refresh(); // categories, axis range and warning colours follow the model
    void restyle(); // colours follow the palette
    bool dropOn(const QPoint& position, const QMimeData* data);
    void highlightCategory(const QString& tag);

    MemoryTableModel* m_model = nullptr;
    QChartView* m_view = nullptr;
    QChart* m_chart = nullptr;
    QBarSeries* m_series = nullptr;
    QVBarModelMapper* m_mapper = nullptr;
    QBarCategoryAxis* m_categories = nullptr;
    QLogValueAxis* m_values = nullptr; // places the bars (no labels of its own)
    QCategoryAxis* m_byteLabels = nullptr; // names the log axis's sizes in bytes
    QIdentityProxyModel* m_floorModel = nullptr; // cells below the log axis shown at its floor
    QLabel* m_note = nullptr;
    QGraphicsRectItem* m_dropHighlight = nullptr;
};

} // namespace ckpt
