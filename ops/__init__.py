"""Operations mode: many requests against one airspace, each approved plan an operational intent the next must respect."""
