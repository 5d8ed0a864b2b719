// SPDX-License-Identifier: MIT
#pragma once

#include "ui/models/histogramtablemodel.h"

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
