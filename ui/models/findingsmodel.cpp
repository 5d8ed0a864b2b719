// SPDX-License-Identifier: MIT
#include "ui/models/findingsmodel.h"

#include "ui/base/displaytext.h"

#include "core/model/checkpoint.h"

#include <QGuiApplication>
#include <QHash>
#include <QPainter>
#include <QPainterPath>
#include <QtMath>

#include <algorithm>

namespace ckpt {

namespace {

// Errors sort first in an ascending sort.
int severityRank(Severity severity)
{
    switch (severity) {
    case Severity::Error:
        return 0;
    case Severity::Warning:
        return 1;
    case Severity::Info:
        return 2;
    }
    return 3;
}

QString fromStd(std::string_view text)
{
    return displayText(text); // torch's terminal codes out, as in every pane
}

} // namespace

QString severityText(Severity severity)
{
    switch (severity) {
    case Severity::Error:
        return QObject::tr("Error");
    case Severity::Warning:
        return QObject::tr("Warning");
    case Severity::Info:
        return QObject::tr("Info");
    }
    return {};
}

QPixmap severityBadge(Severity severity, int logicalSize, bool faint)
{
    const qreal ratio = qApp ? qApp->devicePixelRatio() : 1.0;
    const quint64 key = quint64(logicalSize) << 8 | quint64(int(severity)) << 1 | (faint ? 1 : 0);
    static QHash<quint64, QPixmap> cache; // GUI thread only
    if (const auto found = cache.constFind(key);
        found != cache.constEnd() && qFuzzyCompare(found->devicePixelRatio(), ratio))
        return *found;

    const int pixels = qCeil(logicalSize * ratio);
    QPixmap pixmap(pixels, pixels);
    pixmap.fill(Qt::transparent);
    {
        QPainter painter(&pixmap);
        painter.setRenderHint(QPainter::Antialiasing);
        painter.scale(ratio, ratio);
        const qreal s = logicalSize;
        QColor fill;
        switch (severity) {
        case Severity::Error:
            fill = QColor(0xd0, 0x32, 0x2b);
            break;
        case Severity::Warning:
            fill = QColor(0xe8, 0x9a, 0x0c);
            break;
        case Severity::Info:
            fill = QColor(0x2f, 0x74, 0xc0);
            break;
        }
        if (faint)
            fill.setAlphaF(0.38);
        QColor mark = Qt::white;
        if (faint)
            mark.setAlphaF(0.85);
        painter.setPen(Qt::NoPen);
        painter.setBrush(fill);
        if (severity == Severity::Warning) {
            QPainterPath triangle;
            triangle.moveTo(s / 2, 0.5);
            triangle.lineTo(s - 0.5, s - 1);
            triangle.lineTo(0.5, s - 1);
            triangle.closeSubpath();
            painter.drawPath(triangle);
            painter.setPen(QPen(mark, qMax<qreal>(1.2, s / 8), Qt::SolidLine, Qt::RoundCap));
            painter.drawLine(QPointF(s / 2, s * 0.35), QPointF(s / 2, s * 0.62));
            painter.drawPoint(QPointF(s / 2, s * 0.78));
        } else {
            painter.drawEllipse(QRectF(0.5, 0.5, s - 1, s - 1));
            painter.setPen(QPen(mark, qMax<qreal>(1.2, s / 8), Qt::SolidLine, Qt::RoundCap));
            if (severity == Severity::Error) {
                const qreal a = s * 0.32, b = s * 0.68;
                painter.drawLine(QPointF(a, a), QPointF(b, b));
                painter.drawLine(QPointF(a, b), QPointF(b, a));
            } else {
                painter.drawPoint(QPointF(s / 2, s * 0.28));
                painter.drawLine(QPointF(s / 2, s * 0.45), QPointF(s / 2, s * 0.74));
            }
        }
    }
    pixmap.setDevicePixelRatio(ratio);
    cache.insert(key, pixmap);
    return pixmap;
}

FindingsModel::FindingsModel(QObject* parent)
    : QAbstractTableModel(parent)
{ }

FindingsModel::~FindingsModel() = default;

void FindingsModel::setFindings(std::vector<Finding> findings, std::shared_ptr<const Checkpoint> checkpoint)
{
    beginResetModel();
    m_findings = std::move(findings);
    m_checkpoint = std::move(checkpoint);
    endResetModel();
}

void FindingsModel::clear()
{
    setFindings({}, nullptr);
}

const Finding* FindingsModel::findingAt(int row) const
{
    if (row < 0 || static_cast<std::size_t>(row) >= m_findings.size())
        return nullptr;
    return &m_findings[static_cast<std::size_t>(row)];
}

int FindingsModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_findings.size());
}

int FindingsModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QString FindingsModel::concernsText(const Finding& finding) const
{
    QStringList parts;
    if (!finding.tensors.empty()) {
        const std::size_t shown = std::min<std::size_t>(finding.tensors.size(), 3);
        for (std::size_t i = 0; i < shown; ++i) {
            const std::uint32_t tensor = finding.tensors[i];
            if (m_checkpoint && tensor < m_checkpoint->tensors.size()) {
                const std::string_view name = m_checkpoint->tensors[tensor].name;
                parts.append(name.empty() ? QStringLiteral("(root tensor)") : fromStd(name));
            } else {
                parts.append(tr("tensor %1").arg(tensor));
            }
        }
        QString text = parts.join(QStringLiteral(", "));
        if (finding.tensors.size() > shown)
            text += tr(" and %n more", nullptr, int(finding.tensors.size() - shown));
        return text;
    }
    if (!finding.record.empty()) {
        QString text = fromStd(finding.record);
        if (finding.offset)
            text += tr(" @ byte %1").arg(*finding.offset);
        return text;
    }
    if (finding.offset)
        return tr("byte %1").arg(*finding.offset);
    return tr("the whole file");
}

QString FindingsModel::tooltip(const Finding& finding) const
{
    QString text
        = QStringLiteral("<b>%1</b> (%2)<br>%3")
              .arg(severityText(finding.severity).toHtmlEscaped(), fromStd(finding.codeId()).toHtmlEscaped(),
                  fromStd(finding.message).toHtmlEscaped());
    // The finding's own explanation, or what its code means (core/base/findingcodes.inc).
    const std::string_view why
        = finding.explanation.empty() ? findingCodeInfo(finding.code).explanation : finding.explanation;
    if (!why.empty())
        text += QStringLiteral("<br><br><b>%1</b> %2")
                    .arg(tr("Why:").toHtmlEscaped(), fromStd(why).toHtmlEscaped());
    if (!finding.fix.empty())
        text += QStringLiteral("<br><b>%1</b> %2")
                    .arg(tr("Fix:").toHtmlEscaped(), fromStd(finding.fix).toHtmlEscaped());
    if (!finding.tensors.empty())
        text += QStringLiteral("<br><i>%1</i>")
                    .arg(tr("Click to select the %n tensor(s) concerned in the tree.", nullptr,
                        int(finding.tensors.size()))
                             .toHtmlEscaped());
    return text;
}

QVariant FindingsModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const Finding& finding = m_findings[static_cast<std::size_t>(index.row())];
    const int column = index.column();
    switch (role) {
    case Qt::DisplayRole:
    case Qt::AccessibleTextRole:
        switch (column) {
        case SeverityColumn:
            return severityText(finding.severity);
        case CodeColumn:
            return fromStd(finding.codeId());
        case MessageColumn:
            return fromStd(finding.message);
        case ConcernsColumn:
            return concernsText(finding);
        }
        return {};
    case Qt::DecorationRole:
        if (column == SeverityColumn)
            return severityBadge(finding.severity, 14);
        return {};
    case Qt::ToolTipRole:
        return tooltip(finding);
    case SortRole:
        switch (column) {
        case SeverityColumn:
            return severityRank(finding.severity);
        case ConcernsColumn:
            // Most tensors first in a descending sort; record-only findings by their text.
            return finding.tensors.empty() ? QVariant(concernsText(finding))
                                           : QVariant(qulonglong(finding.tensors.size()));
        default:
            return data(index, Qt::DisplayRole);
        }
    case SeverityRole:
        return int(finding.severity);
    case TensorsRole: {
        QList<uint> tensors;
        tensors.reserve(static_cast<qsizetype>(finding.tensors.size()));
        for (const std::uint32_t tensor : finding.tensors)
            tensors.append(tensor);
        return QVariant::fromValue(tensors);
    }
    case ExplanationRole:
        return fromStd(finding.explanation);
    case FixRole:
        return fromStd(finding.fix);
    case RecordRole:
        return fromStd(finding.record);
    default:
        return {};
    }
}

QVariant FindingsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount)
        return {};
    if (role == Qt::DisplayRole) {
        switch (section) {
        case SeverityColumn:
            return tr("Severity");
        case CodeColumn:
            return tr("Code");
        case MessageColumn:
            return tr("Message");
        case ConcernsColumn:
            return tr("Concerns");
        }
    }
    if (role == Qt::ToolTipRole) {
        switch (section) {
        case SeverityColumn:
            return tr("Error: torch.load fails or the data is damaged. Warning: it may load but something "
                      "is off. Info: worth knowing.");
        case CodeColumn:
            return tr("A stable name for the kind of finding (the CLI's check --json prints it too)");
        case MessageColumn:
            return tr("What is wrong, in torch's own words where torch would print a message");
        case ConcernsColumn:
            return tr("The tensors, or the record of the file, the finding is about");
        }
    }
    return {};
}

Qt::ItemFlags FindingsModel::flags(const QModelIndex& index) const
{
    if (!index.isValid())
        return Qt::NoItemFlags;
    return Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemNeverHasChildren;
}

} // namespace ckpt
