// SPDX-License-Identifier: MIT
#pragma once

#include <QFrame>

class QLabel;
class QToolButton;

namespace ckpt {

// One line above the tree that says one thing (the safety rating, a whole-file load error) and,
// on "details…", expands in place to a few more lines; the Findings dock holds the full text
// (issue 27: the tree gets the room, each thing is said once). Its colours follow the palette, so
// the dark theme has dark banners.
class OneLineBanner : public QFrame {
    Q_OBJECT

public:
    enum class Tone { Neutral, Good, Caution, Danger };

    explicit OneLineBanner(const QString& objectName, QWidget* parent = nullptr);

    // `line` and `more` are HTML; an empty `more` hides "details…".
    void present(Tone tone, const QString& line, const QString& more = {});
    void clear(); // hides the banner
    Tone tone() const { return m_tone; }

    void setExpanded(bool expanded);
    bool isExpanded() const { return m_expanded; }
    bool hasMore() const { return !m_more.isEmpty(); }

    // Plain text of what is shown: the line, and the expansion when it is expanded.
    QString text() const;
    QString lineText() const;
    QString moreText() const;
    QToolButton* detailsButton() const { return m_toggle; }

    // Background, border and text colours of a tone on `palette` (dark ones on a dark palette).
    struct Colors {
        QColor background;
        QColor border;
        QColor text;
    };
    static Colors colors(Tone tone, const QPalette& palette);

protected:
    void changeEvent(QEvent* event) override;
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void restyle();

    QLabel* m_lineLabel = nullptr;
    QLabel* m_moreLabel = nullptr;
    QToolButton* m_toggle = nullptr;
    Tone m_tone = Tone::Neutral;
    QString m_more;
    bool m_expanded = false;
    bool m_restyling = false;
};

} // namespace ckpt
