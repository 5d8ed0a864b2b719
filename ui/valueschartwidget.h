#pragma once

#include <QAbstractTableModel>
#include <QWidget>

#include <cstdint>
#include <vector>

class QBarCategoryAxis;
class QBarSeries;
class QChart;
class QChartView;
class QValueAxis;
class QVBarModelMapper;

namespace ckpt {

// A histogram as a table: one row per bin, its lower and upper edge and its count. What the
// values chart reads through a QVBarModelMapper.
class HistogramTableModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column { CountColumn, LowColumn, HighColumn, ColumnCount };

    explicit HistogramTableModel(QObject* parent = nullptr);

    // Equal-width bins from `low` to `high`; empty counts: no histogram.
    void setHistogram(double low, double high, std::vector<std::uint64_t> counts);
    double low() const { return m_low; }
    double high() const { return m_high; }
    std::uint64_t maximumCount() const;
    double edge(int bin) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    double m_low = 0, m_high = 0;
    std::vector<std::uint64_t> m_counts;
};

// The histogram of a tensor's finite values as bars. Every piece of Qt Charts code for values lives
// here, so that a move to another chart library touches this file only.
class ValuesChartWidget : public QWidget {
    Q_OBJECT

public:
    explicit ValuesChartWidget(QWidget* parent = nullptr);
    ~ValuesChartWidget() override;

    void setHistogram(double low, double high, std::vector<std::uint64_t> counts);
    void clear();
    HistogramTableModel* model() const { return m_model; }
    QChartView* chartView() const { return m_view; }

protected:
    void changeEvent(QEvent* event) override;

private:
    void refresh();
    void restyle();

    HistogramTableModel* m_model = nullptr;
    QChartView* m_view = nullptr;
    QChart* m_chart = nullptr;
    QBarSeries* m_series = nullptr;
    QVBarModelMapper* m_mapper = nullptr;
    QBarCategoryAxis* m_bins = nullptr;
    QValueAxis* m_counts = nullptr;
};

} // namespace ckpt
